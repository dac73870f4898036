"""Pure model functions: FLOPs, memory, throughput, sizing, cost. No widgets, no printing.

Each function works on plain numbers and on polars expressions alike, so the same
formula evaluates one scenario in a notebook or every option of a frame at once.
"""
