"""The qnn backend: static-shape graphs on the Hexagon NPU through onnxruntime's QNN provider."""
from .runtime import QnnTransformer

__all__ = ["QnnTransformer"]
