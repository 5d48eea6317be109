"""qwenmem: inspect and maintain the on-disk memory of the QwenPaw (CoPaw) assistant."""

__version__ = "0.1.0"
