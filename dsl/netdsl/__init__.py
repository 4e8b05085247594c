"""netdsl: declarative model-builder."""
