"""convrag: conversational RAG on LangGraph."""

__version__ = "0.1.0"

import warnings

# pgserver asks platformdirs for XDG_RUNTIME_DIR, unset on servers; the fallback is fine.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
