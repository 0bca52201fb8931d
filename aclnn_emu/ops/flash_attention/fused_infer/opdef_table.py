"""The (dtype, format) combinations fused_infer_attention_score_def.cpp registers, per chip
(all ND): one letter per combination and tensor; a single letter is that dtype in every
combination (a DataTypeList). Read with ``combos``."""

from aclnn_emu.dtypes import DataType

D = DataType
LETTERS = {
    "h": D.ACL_FLOAT16,
    "b": D.ACL_BF16,
    "i": D.ACL_INT8,
    "4": D.ACL_INT4,
    "B": D.ACL_BOOL,
    "u": D.ACL_UINT8,
    "U": D.ACL_UINT64,
    "f": D.ACL_FLOAT,
    "I": D.ACL_INT32,
    "L": D.ACL_INT64,
    "H": D.ACL_HIFLOAT8,
    "e": D.ACL_FLOAT8_E4M3FN,
    "m": D.ACL_FLOAT8_E8M0,
    "q": D.ACL_FLOAT4_E2M1,
    "r": D.ACL_FLOAT4_E1M2,
}

# ascend910b and ascend910_93: 105 combinations.
A2 = {
    "query": (
        "hhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbhhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbbbhhibbbhbhbhhhhhhbhhbbiibb"
    ),
    "key": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444iiiii44hhiiiiii"
    ),
    "value": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444iiiii44hhiiiiii"
    ),
    "pseShiftOptional": (
        "hhbhhhhbbhbhhhhbbhbhhhhbbbbhhbbhhhhhhhhhhbhhhhbbhbhhhhbbhbhhhhbbbbhhbbhhhhhhhhbbhhhbbbhbhbhhhhhhbhhbbhhbb"
    ),
    "attenMaskOptional": (
        "hBBuuBBBBhBuuBBBBhBuuBBBBBBBBBBBuBBBBiBhBBuuBBBBhBuuBBBBhBuuBBBBBBBBBBBuBBBBiBBBBBiiBuBBBBBiuBBBBiuuiuiiu"
    ),
    "deqScale1Optional": (
        "UUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUffffffffffffffffffffffffffffffffffffffffffffUUUffffUUUffffffUUffUU"
    ),
    "quantScale1Optional": "f",
    "deqScale2Optional": (
        "UUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUffffffffffffffffffffffffffffffffffffffffffffUUUffffUUUffffffUUffUU"
    ),
    "quantScale2Optional": (
        "ffffffffbfffffffbfffffffbffffbbfffffffbffffffffbfffffffbfffffffbffffbbfffffffbbffffffbfffffffhhffffbbffbb"
    ),
    "quantOffset2Optional": (
        "ffffffffbfffffffbfffffffbffffbbfffffffbffffffffbfffffffbfffffffbffffbbfffffffbbffffffbfffffffhhffffbbffbb"
    ),
    "antiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbfbfhhhhhhbffhhhhhhbfhhhffff"
    ),
    "antiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbfbfhhhhhhbffhhhhhhbfhhhffff"
    ),
    "blockTableOptional": "I",
    "queryPaddingSizeOptional": "L",
    "kvPaddingSizeOptional": "L",
    "keyAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbffhhhffhbfhbbffff"
    ),
    "keyAntiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbffhhhffhbfhbbffff"
    ),
    "valueAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbffffffffffhbbffff"
    ),
    "valueAntiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbffffffffffhbbffff"
    ),
    "keySharedPrefixOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiihfh4444iiiii44hhhhiiii"
    ),
    "valueSharedPrefixOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiihfh4444iiiii44hhhhiiii"
    ),
    "queryRopeOptional": (
        "hhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbhhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbbbhhibbbhbhbhhhhhhbhhbbbbbb"
    ),
    "keyRopeOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444iiiii44hhiibbii"
    ),
    "keyRopeAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbffhhhffhbfhbbbbff"
    ),
    "dequantScaleQueryOptional": "f",
    "learnableSinkOptional": "b",
    "attentionOut": (
        "hhbihhiiihbihhiiihbihhiiibihibibhiiiiiihhbihhiiihbihhiiihbihhiiibihibibhiiiiiibbhhiiiihbhbhhhihhbhibbbbbb"
    ),
    "softmaxLse": "f",
}

# ascend910_95: 396 combinations.
ARCH35 = {
    "query": (
        "hhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbhhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbbbhhibbbhbhb"
        "hhhhhhbhhhhhhbbbbHeHeHeHeHeHeiiiihbbbbbhhhhbbhhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbeehhhhhhbbhhbbbbhhhhhhbbhhbbbbbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbb"
        "bbhhhhhhbbhhbbbbbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbbbbhhhhhhbbhhbbbbbbhhbbbh"
        "bhbhhhhhhbhhhhbbbbhbbbbbhhhhbbbeeeHH"
    ),
    "key": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444"
        "iiiii44hhHeqrHeqrHeHeHeHeHeHeiiiiiiiiiiiiiiiihhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbeeiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiii"
        "iiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4"
        "444iiiii44HeqrHeqriiiiiiiiiiiibeeeHH"
    ),
    "value": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444"
        "iiiii44hhHeqrHeqrHeHeHeHeHeHeiiiiiiiiiiiiiiiihhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbeeiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiii"
        "iiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4"
        "444iiiii44HeqrHeqriiiiiiiiiiiibeeeHH"
    ),
    "pseShiftOptional": (
        "hhbhhhhbbhbhhhhbbhbhhhhbbbbhhbbhhhhhhhhhhbhhhhbbhbhhhhbbhbhhhhbbbbhhbbhhhhhhhhbbhhhbbbhbhb"
        "hhhhhhbhhhhhhbbbbhhhhhhhhhhhhhhhhhbbbbbhhhhbbhhhhhhbbbbbbbbbbbbffffffffffffffffffffffffbbb"
        "bbbhhhhhhbhhhhhhhhbbhhbbhhhhhhhhbbhhbbhhbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbb"
        "hhhhhhhhbbhhbbhhbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbbhhhhhhhhbbhhbbhhbbhhbbbh"
        "bhbhhhhhhbhhhhbbbbhbbbbbhhhhbbbhhhhh"
    ),
    "attenMaskOptional": (
        "hBBuuBBBBhBuuBBBBhBuuBBBBBBBBBBBuBBBBiBhBBuuBBBBhBuuBBBBhBuuBBBBBBBBBBBuBBBBiBBBBBiiBuBBBB"
        "BiuBBBBiuBBBBBBBBBBBBiiiiuuuuiiuuuBiiuuBiiuiuBBuuiiBBuuiiBBuuiiBiuBiuBiuBiuBiuBiuBiuBiuBBi"
        "iuuBBiiuuihhBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBiBuBBBBBiuBBBBBBBBBBBBuBiiuuBiiuiuBBBBBBBBBBBB"
        "BBBBBBBBBBBBBBBBBBBBiBuBBBBBiuBBBBBBBBBBBBuBiiuuBiiuiuBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBiBuB"
        "BBBBiuBBBBBBBBBBBBuBiiuuBiiuiuuuiBBB"
    ),
    "deqScale1Optional": (
        "UUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUffffffffffffffffffffffffffffffffffffffffffffUUUffff"
        "UUUffffffffffffffUUffUUffUUfffUfUfffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
        "ffffffffffUUUUUUUUUUUUUUUUffffffffffffffffffUUUffffUUUffffffffffffffffffffffffUUUUUUUUUUUU"
        "UUffffffffffffffffffUUUffffUUUffffffffffffffffffffffffUUUUUUUUUUUUUUffffffffffffffffffUUUf"
        "fffUUUffffffffffffffffffffffffUfffff"
    ),
    "quantScale1Optional": "f",
    "deqScale2Optional": (
        "UUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUUffffffffffffffffffffffffffffffffffffffffffffUUUffff"
        "UUUffffffffffffffUUffUUffUUfffUfUfffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
        "ffffffffffUUUUUUUUUUUUUUUUffffffffffffffffffUUUffffUUUffffffffffffffffffffffffUUUUUUUUUUUU"
        "UUffffffffffffffffffUUUffffUUUffffffffffffffffffffffffUUUUUUUUUUUUUUffffffffffffffffffUUUf"
        "fffUUUffffffffffffffffffffffffUfffff"
    ),
    "quantScale2Optional": (
        "ffffffffbfffffffbfffffffbffffbbfffffffbffffffffbfffffffbfffffffbffffbbfffffffbbffffffbffff"
        "fffhhffffffffffffffffffffffffffffffffffffffffffffffffffffbbbbbbffffffffffffffffffbbbbbbfbf"
        "bfbfbfbfbfffffffffffffbbfbffffffffffbbfbbfffffbfffffffhhffffffffffffffffffffffffffffffffbb"
        "fbffffffffffbbfbbfffffbfffffffhhffffffffffffffffffffffffffffffffbbfbffffffffffbbfbbfffffbf"
        "ffffffhhffffffffffffffffffffffffffff"
    ),
    "quantOffset2Optional": (
        "ffffffffbfffffffbfffffffbffffbbfffffffbffffffffbfffffffbfffffffbffffbbfffffffbbffffffbffff"
        "fffhhffffffffffffffffffffffffffffffffffffffffffffffffffffbbbbbbffffffffffffffffffbbbbbbfbf"
        "bfbfbfbfbfffffffffffffbbfbffffffffffbbfbbfffffbfffffffhhffffffffffffffffffffffffffffffffbb"
        "fbffffffffffbbfbbfffffbfffffffhhffffffffffffffffffffffffffffffffbbfbffffffffffbbfbbfffffbf"
        "ffffffhhffffffffffffffffffffffffffff"
    ),
    "antiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbfbfhhhhhhbff"
        "hhhhhhbfhhhmmbbmmhhhhhhhhhhhhhhhhhfbfbffhfhbbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffhhhhhhhhbbfffffbhhhhhhbbfffffbfbfhhhhhbffhhhhhhbhhmmbbmmhfbfbffhfhbbhhhhhhbbffff"
        "fbhhhhhhbbfffffbfbfhhhhhbffhhhhhhbhhmmbbmmhfbfbffhfhbbhhhhhhbbfffffbhhhhhhbbfffffbfbfhhhhh"
        "bffhhhhhhbhhmmbbmmhfbfbffhfhbbbfffff"
    ),
    "antiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbfbfhhhhhhbff"
        "hhhhhhbfhhhmmbbmmhhhhhhhhhhhhhhhhhfbfbffhfhbbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffhhhhhhhhbbfffffbhhhhhhbbfffffbfbfhhhhhbffhhhhhhbhhmmbbmmhfbfbffhfhbbhhhhhhbbffff"
        "fbhhhhhhbbfffffbfbfhhhhhbffhhhhhhbhhmmbbmmhfbfbffhfhbbhhhhhhbbfffffbhhhhhhbbfffffbfbfhhhhh"
        "bffhhhhhhbhhmmbbmmhfbfbffhfhbbbfffff"
    ),
    "blockTableOptional": "I",
    "queryPaddingSizeOptional": "L",
    "kvPaddingSizeOptional": "L",
    "keyAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbff"
        "hhhffhbfhhhmmbbmmhhhhhhhhhhhhhhhhfbbbfbhhfhfbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffffhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbffff"
        "fbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbh"
        "bffhhhffhbhhmmbbmmfbbbfbhhfhfbbfffff"
    ),
    "keyAntiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbff"
        "hhhffhbfhhhmmbbmmhhhhhhhhhhhhhhhhfbbbfbhhfhfbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffhhhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbffff"
        "fbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbh"
        "bffhhhffhbhhmmbbmmfbbbfbhhfhfbbfffff"
    ),
    "valueAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbff"
        "ffffffffhhhmmbbmmhhhhhhhhhhhhhhhhffbffffhfhfbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffffhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbffff"
        "fbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmfbbbfbhhfhfbhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbh"
        "bffhhhffhbhhmmbbmmfbbbfbhhfhfbbfffff"
    ),
    "valueAntiquantOffsetOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbff"
        "ffffffffhhhmmbbmmhhhhhhhhhhhhhhhhffbffffhfhfbhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffhhhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbhbfffffffffhhmmbbmmffbffffhfhfbhhhhhhbbffff"
        "fbhhhhhhbbfffffbbfhfffbhbfffffffffhhmmbbmmffbffffhfhfbhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbh"
        "bfffffffffhhmmbbmmffbffffhfhfbbfffff"
    ),
    "keySharedPrefixOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiihfh4444"
        "iiiii44hhHeqrHeqrHeHeHeHeHeHeiiiiiiiiiiiiiiiihhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbhhiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiihfh4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiii"
        "iiiiiiiiiiiiiiiiiiiihfh4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiihfh4"
        "444iiiii44HeqrHeqriiiiiiiiiiiibeeeHH"
    ),
    "valueSharedPrefixOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiihfh4444"
        "iiiii44hhHeqrHeqrHeHeHeHeHeHeiiiiiiiiiiiiiiiihhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbhhiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiihfh4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiii"
        "iiiiiiiiiiiiiiiiiiiihfh4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiihfh4"
        "444iiiii44HeqrHeqriiiiiiiiiiiibeeeHH"
    ),
    "queryRopeOptional": (
        "hhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbhhbiihhbbhbiihhbbhbiihhbbbbhhbbbhhhhbhbbbhhibbbhbhb"
        "hhhhhhbhhhhhhbbbbHeHeHeHeHeHeiiiihbbbbbhhhhbbhhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbhhhhhhhhbbhhbbbbhhhhhhbbhhbbbbbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbb"
        "bbhhhhhhbbhhbbbbbbhhbbbhbhbhhhhhhbhhhhbbbbhbbbbbhhhhbbhhhhhhbbhhbbbbhhhhhhbbhhbbbbbbhhbbbh"
        "bhbhhhhhhbhhhhbbbbhbbbbbhhhhbbbbbbbb"
    ),
    "keyRopeOptional": (
        "hhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihihhbiiiibbhbiiiibbhbiiiibbiiiiiibhhhhihiiiiiiiii4444"
        "iiiii44hhHeqrHeqrHeHeHeHeHeHeiiiiiiiiiiiiiiiihhhhhhbbbbbbbbbbbbhhhbbbhhhbbbhhhbbbbbbbbbbbb"
        "bbbbbbbbbbhhiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiii"
        "iiiiiiiiiiiiiiiiiiiiiii4444iiiii44HeqrHeqriiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii4"
        "444iiiii44HeqrHeqriiiiiiiiiiiibbbbbb"
    ),
    "keyRopeAntiquantScaleOptional": (
        "hhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbhhbhhhhhhhbhhhhhhhbhhhhhhbbfffffffffffbbfhfhffbhbff"
        "hhhffhbfhhhmmbbmmhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhbbbbbbbbbbbbfffffffffffffffffffffffffff"
        "ffffffffffhhhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmhhhhhhhhhhhhhhhhhhbbffff"
        "fbhhhhhhbbfffffbbfhfffbhbffhhhffhbhhmmbbmmhhhhhhhhhhhhhhhhhhbbfffffbhhhhhhbbfffffbbfhfffbh"
        "bffhhhffhbhhmmbbmmhhhhhhhhhhhhbbbbbb"
    ),
    "dequantScaleQueryOptional": "f",
    "learnableSinkOptional": "b",
    "attentionOut": (
        "hhbihhiiihbihhiiihbihhiiibihibibhiiiiiihhbihhiiihbihhiiihbihhiiibihibibhiiiiiibbhhiiiihbhb"
        "hhhihhbhihhhhbbbbhhhhhhhhhhhhhhhhhbbbbbhhhhbbHeHeHeHeHeHeHeHeHehhhbbbHHHHHHeeeeeeHHHeeeiii"
        "iiiiiiiiibhbiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiieeeeeeeeeeee"
        "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHHH"
        "HHHHHHHHHHHHHHHHHHHHHHHHHHHHHHbbbbhb"
    ),
    "softmaxLse": "f",
}


def combos(table: dict) -> list[dict]:
    """The table as one dict (parameter name -> DataType) per combination."""
    count = max(len(spec) for spec in table.values())
    return [{name: LETTERS[spec[i] if len(spec) > 1 else spec] for name, spec in table.items()} for i in range(count)]
