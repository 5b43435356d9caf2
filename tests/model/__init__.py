"""Tests of the pure model: views, placement, drafts, rendering, validation, redaction."""
