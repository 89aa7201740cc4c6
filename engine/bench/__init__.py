"""``hexa bench``: methods compared on the same prompts, interleaved, in one run."""
