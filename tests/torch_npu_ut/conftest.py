"""What a vllm-ascend-style unit-test lane puts in its conftest.py: the stand-in instead of a MagicMock."""

import aclnn_emu.torch_npu

aclnn_emu.torch_npu.install()
