"""Running the forward pass: the ``Backend`` contract, the compact transformer on torch or the
native kernels (``kernels/``), the QNN HTP graphs (``qnn/``), the KV cache, the arithmetic the
torch path computes with, and the forward-cost profile that sizes draft trees."""
