"""The journal: a durable record of every browser operation (SPEC §8)."""
