"""The pipeline Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2, with an evaluation after each stage."""
