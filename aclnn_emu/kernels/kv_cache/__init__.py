"""The paged KV-cache operators: ScatterPaKvCache writes tokens into a block-paged cache,
GatherPaKvCache reads them back into contiguous key/value.

`layouts` is what both share: the cache layouts (ND rows, PA_NZ 32-byte pieces), the slot
arithmetic and the compiled copy that moves token rows in and out; `findings` the sanitizer
kinds and the duplicate test. The rest is per operator and chip: `scatter_a2` / `scatter_arch35`
(with `scatter_rows`, the scatter's ordered row writes) and `gather`.
"""
