"""convrag: conversational RAG on LangGraph."""

__version__ = "0.1.0"
