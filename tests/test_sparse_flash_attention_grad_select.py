"""Which keys a SparseFlashAttentionGrad row uses (kernels/sparse_attention/select.py)."""

import numpy as np

from aclnn_emu.kernels.sparse_attention.select import select_row, selected_counts, tnd_rows


def select(ids, s1=0, sq=1, sk=100, kbase=0, bs=16, causal=False, num_keys=10_000):
    found = []
    sel = select_row(
        np.array(ids, np.int32),
        s1,
        sq,
        sk,
        kbase,
        block_size=bs,
        causal=causal,
        num_keys=num_keys,
        report=lambda kind, message: found.append(kind),
    )
    return sel, found


def test_blocks_expand_to_positions_with_a_short_tail():
    sel, found = select([0, 2, 6])  # Sk = 100: block 6 holds keys 96..99
    np.testing.assert_array_equal(sel.positions, np.r_[0:16, 32:48, 96:100])
    assert not sel.masked.any() and found == []


def test_positions_are_offset_by_the_batch():
    sel, _ = select([1], kbase=1000, bs=1, sk=5)
    np.testing.assert_array_equal(sel.positions, [1001])


def test_a_row_ends_at_its_first_minus_one():
    idx = np.array([[3, 1, -1, 5], [-1, 2, 2, 2], [4, 4, 4, 4]])
    np.testing.assert_array_equal(selected_counts(idx), [2, 0, 4])


def test_mode_three_masks_the_last_diagonal_copy_of_each_512_key_chunk():
    """bs = 16: 32 blocks per chunk. Row 0 of Sq=20, Sk=100 sees keys <= 80 (diagonal block 5).
    Copies of block 5 at entries 0 and 1 share chunk 0 (only entry 1 is masked); the copy at
    entry 40 is in chunk 1 and masked too."""
    ids = [5, 5] + [0] * 38 + [5]
    sel, _ = select(ids, s1=0, sq=20, sk=100, causal=True)
    masked_blocks = [j for j in range(len(ids)) if sel.masked[j * 16 : (j + 1) * 16].any()]
    assert masked_blocks == [1, 40]
    np.testing.assert_array_equal(np.flatnonzero(sel.masked[16:32]), np.arange(1, 16))  # keys 81..95


def test_block_size_one_masks_nothing():
    sel, _ = select(list(range(50)), s1=0, sq=20, sk=100, bs=1, causal=True)
    assert not sel.masked.any()


def test_out_of_range_entries_are_reported_and_dropped():
    sel, found = select([0, 7, -3], bs=1, sk=5)
    np.testing.assert_array_equal(sel.positions, [0])
    assert found == ["index-out-of-range"]


def test_keys_past_the_key_tensor_are_reported_and_dropped():
    sel, found = select([0, 1], bs=1, sk=10, kbase=8, num_keys=9)
    np.testing.assert_array_equal(sel.positions, [8])
    assert found == ["index-out-of-range"]


def test_kernel_block_assumptions_are_reported():
    assert select([0, 2, 6])[1] == []  # ascending, ending at the tail block
    assert select([6, 2])[1] == ["undefined-behaviour", "undefined-behaviour"]  # tail first, last block full
    assert select([0, 2], sk=100)[1] == ["undefined-behaviour"]  # last block 2 full, kernel scatters 100 % 16


def test_tnd_rows_follow_cumulative_offsets():
    found = []
    spans = tnd_rows(7, np.array([2, 5]), np.array([10, 30]), lambda kind, message: found.append(kind))
    np.testing.assert_array_equal(spans.s1[:5], [0, 1, 0, 1, 2])
    np.testing.assert_array_equal(spans.kbase[:5], [0, 0, 10, 10, 10])
    np.testing.assert_array_equal(spans.sk[:5], [10, 10, 20, 20, 20])
    np.testing.assert_array_equal(spans.valid, [True] * 5 + [False] * 2)
    assert found == ["index-out-of-range"]
