"""The conversational graph: state, context and the builder."""
