# cmake -DPROGRAM=... -P expect_abort.cmake: runs PROGRAM --oom and succeeds
# only if it was killed (abort) after printing "poolkit: out of memory".
execute_process(COMMAND ${PROGRAM} --oom
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(result EQUAL 0 OR result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "expected an abort, got exit status '${result}'\n${out}${err}")
endif()
if(NOT err MATCHES "poolkit: out of memory in pk::pool_allocator")
    message(FATAL_ERROR "abort without poolkit's message: '${err}'")
endif()
message(STATUS "aborted as documented (${result}): ${err}")
