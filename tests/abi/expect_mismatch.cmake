# cmake -DPROGRAM=... -DBUILT=N -DLIBRARY=M -P expect_mismatch.cmake: runs a
# program compiled with headers of pool ABI N against a library of ABI M,
# and succeeds only if its first call stopped it (abort) with poolkit's
# message naming both layouts, before it printed anything of its own.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(result EQUAL 0 OR result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "expected an abort at the first call, got exit status '${result}'\n${out}${err}")
endif()
set(want "poolkit: ABI mismatch: this program was compiled with poolkit headers whose inline pool paths have layout ${BUILT} \\(PK_POOL_ABI\\), but runs with libpoolkit [0-9.]+, whose layout is ${LIBRARY}")
if(NOT err MATCHES "${want}")
    message(FATAL_ERROR "abort without poolkit's message naming layouts ${BUILT} and ${LIBRARY}: '${err}'")
endif()
if(out MATCHES "abi program")
    message(FATAL_ERROR "the program ran past its first call: '${out}'")
endif()
message(STATUS "stopped at its first call as documented (${result}): ${err}")
