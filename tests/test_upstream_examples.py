"""CANN's own examples of FlashAttentionScore and FlashAttentionScoreGrad (ops-transformer 8.5.0-beta.1
`attention/flash_attention_score*/examples/`) compile with the official flags and run unchanged; what
they print matches the goldens to CANN's fp32 standard. The examples are read from the source mirror at test time (the project
holds none of their code); without the mirror the test is skipped."""

import pathlib
import subprocess

import numpy as np
import pytest

import cabi
import precision
from aclnn_emu import toolkit
from golden.samples import F32, _attention_sample, _gradient_sample

MIRROR = pathlib.Path("/work/.mirror/cannmirror+ops-transformer/repo")
TAG = "v8.5.0-beta.1"
SCALE = 1 / np.sqrt(128)  # every example: one sequence of 256, one head of 128, FLOAT 1.0s, zero mask
EXAMPLES = {
    "attention/flash_attention_score/examples/test_aclnn_flash_attention_score_v2_fp32.cpp": lambda: _attention_sample(
        F32, scale=SCALE
    ),
    "attention/flash_attention_score/examples/test_aclnn_flash_attention_score_varlen_v4_fp32.cpp": lambda: (
        _attention_sample(F32, scale=SCALE)
    ),
    "attention/flash_attention_score_grad/examples/test_aclnn_flash_attention_score_grad_v2.cpp": lambda: (
        _gradient_sample(F32, scale=SCALE)
    ),
    "attention/flash_attention_score_grad/examples/test_aclnn_flash_attention_unpadding_score_grad_v4_fp32.cpp": (
        lambda: _gradient_sample(F32, scale=SCALE)
    ),
}


@pytest.mark.skipif(not MIRROR.exists(), reason="the ops-transformer mirror is not on this machine")
@pytest.mark.parametrize("path", sorted(EXAMPLES), ids=lambda p: pathlib.Path(p).stem)
def test_example_runs_unchanged(tmp_path, path):
    source = tmp_path / pathlib.Path(path).name
    source.write_bytes(
        subprocess.run(["git", "-C", str(MIRROR), "show", f"{TAG}:{path}"], check=True, capture_output=True).stdout
    )
    exe = tmp_path / source.stem
    built = toolkit.compile(source, exe)
    assert built.returncode == 0, built.stderr
    result = cabi.run(exe, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    lines = [line for line in result.stdout.splitlines() if "result[" in line]
    expected = EXAMPLES[path]()
    assert len(lines) == len(expected)
    # FLOAT results: the values, not their last printed digit, are what fp32 arithmetic can predict
    pairs = [(got, want) for got, want in zip(lines, expected) if want is not None]
    got, want = (np.array([float(line.rsplit(" ", 1)[1]) for line in side]) for side in zip(*pairs))
    failure = precision.failure(got, want, "float32")
    assert failure is None, failure
