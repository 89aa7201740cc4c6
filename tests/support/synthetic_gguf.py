"""A tiny synthetic GGUF (written with the ``gguf`` package) naming any architecture: enough of a
header for hexa to read, no real weights."""
from __future__ import annotations

from pathlib import Path


def write_gguf(path: Path, arch: str, file_type: int | None = None, vocab: int = 16, after_vocab: bool = False) -> Path:
    """A GGUF of one tensor; ``after_vocab``: its file type after a vocabulary, where llama.cpp's
    quantizer writes it (it sets the key anew, which moves it last)."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_context_length(128)
    writer.add_embedding_length(8)
    if after_vocab:
        writer.add_token_list([f"t{i}" for i in range(vocab)])
    if file_type is not None:
        writer.add_file_type(file_type)
    writer.add_tensor("token_embd.weight", np.zeros((vocab, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
