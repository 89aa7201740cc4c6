"""The model: where its file comes from (``source``), its one-time conversion into the cache
(``cache``), its config, its weights as the kernels keep them (``packed_weights``, and a GGUF's
own codes: ``gguf_header``, ``gguf_model``, ``gguf_codes``), its tokenizer and vocabulary."""
