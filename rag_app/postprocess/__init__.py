"""Node postprocessors: rerank, evidence gate, neighbour expansion."""
