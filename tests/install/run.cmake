# The install test: installs a poolkit build into a scratch prefix, checks
# what landed there, then builds and runs tests/install/consumer.c against it
# with find_package, with pkg-config through CMake, and with pkg-config on a
# plain compiler command line.
#
#   cmake -DPOOLKIT_BUILD_DIR=... -DPOOLKIT_SOURCE_DIR=... -DWORK_DIR=...
#         [-DC_COMPILER=cc] [-DGENERATOR=Ninja] -P run.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var POOLKIT_BUILD_DIR POOLKIT_SOURCE_DIR WORK_DIR)
    if(NOT ${var})
        message(FATAL_ERROR "run.cmake: -D${var}=... is required")
    endif()
endforeach()
if(NOT C_COMPILER)
    set(C_COMPILER cc)
endif()
if(NOT GENERATOR)
    set(GENERATOR "Unix Makefiles")
endif()

set(prefix ${WORK_DIR}/prefix)
set(consumer_src ${POOLKIT_SOURCE_DIR}/tests/install)

function(run)
    cmake_parse_arguments(R "" "WORKING_DIRECTORY" "COMMAND" ${ARGN})
    string(REPLACE ";" " " shown "${R_COMMAND}")
    message(STATUS "install test: ${shown}")
    if(NOT R_WORKING_DIRECTORY)
        set(R_WORKING_DIRECTORY ${WORK_DIR})
    endif()
    execute_process(COMMAND ${R_COMMAND} WORKING_DIRECTORY ${R_WORKING_DIRECTORY}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "install test: failed (${rc}): ${shown}\n${out}")
    endif()
    set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# 1. Install.
run(COMMAND ${CMAKE_COMMAND} --install ${POOLKIT_BUILD_DIR} --prefix ${prefix})

# 2. What must be there.
file(GLOB libdirs LIST_DIRECTORIES true ${prefix}/lib ${prefix}/lib64 ${prefix}/lib/*-linux-gnu)
set(libdir "")
foreach(d IN LISTS libdirs)
    if(EXISTS ${d}/libpoolkit.a)
        set(libdir ${d})
    endif()
endforeach()
if(NOT libdir)
    message(FATAL_ERROR "install test: no libpoolkit.a under ${prefix}")
endif()
foreach(f
        ${prefix}/include/poolkit/poolkit.h
        ${prefix}/include/poolkit/pool.h
        ${libdir}/libpoolkit.a
        ${libdir}/libpoolkit.so
        ${libdir}/libpoolkit.so.0
        ${libdir}/libpoolkit.so.0.1.0
        ${libdir}/pkgconfig/poolkit.pc
        ${libdir}/cmake/poolkit/poolkitConfig.cmake
        ${libdir}/cmake/poolkit/poolkitConfigVersion.cmake)
    if(NOT EXISTS ${f})
        message(FATAL_ERROR "install test: missing ${f}")
    endif()
endforeach()

# 3. Only public names (pk_...) are global in either library: the static one
#    must not hand its internal names to the programs that link it.
find_program(NM nm)
if(NM)
    foreach(check "libpoolkit.a;-g;--defined-only" "libpoolkit.so;-D;--defined-only")
        list(POP_FRONT check lib)
        run(COMMAND ${NM} ${check} ${libdir}/${lib})
        string(REPLACE "\n" ";" lines "${run_output}")
        set(leaked "")
        foreach(line IN LISTS lines)
            if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ ]+)$")
                set(sym ${CMAKE_MATCH_1})
                if(NOT sym MATCHES "^pk_")
                    list(APPEND leaked ${sym})
                endif()
            endif()
        endforeach()
        if(leaked)
            message(FATAL_ERROR "install test: ${lib} exports names outside pk_: ${leaked}")
        endif()
    endforeach()
else()
    message(STATUS "install test: nm not found, symbol check skipped")
endif()

# 4. find_package(poolkit).
run(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/find-package
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DPOOLKIT_FIND=cmake)
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/find-package)
run(COMMAND ${WORK_DIR}/find-package/consumer_static)
run(COMMAND ${WORK_DIR}/find-package/consumer_shared)

# 5. pkg-config, through CMake's FindPkgConfig (links libpoolkit.so).
set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
run(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/pkg-config
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DPOOLKIT_FIND=pkg-config)
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/pkg-config)
run(COMMAND ${WORK_DIR}/pkg-config/consumer_pkgconfig)

# 6. pkg-config on a plain command line, as a Makefile would use it:
#    cc consumer.c $(pkg-config --cflags --libs poolkit), and the static
#    variant with --static against libpoolkit.a.
find_program(PKG_CONFIG pkg-config REQUIRED)
run(COMMAND ${PKG_CONFIG} --cflags --libs poolkit)
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(COMMAND ${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${consumer_src}/consumer.c
    ${flags} -Wl,-rpath,${libdir} -o ${WORK_DIR}/consumer_cli_shared)
run(COMMAND ${WORK_DIR}/consumer_cli_shared)
run(COMMAND ${PKG_CONFIG} --static --cflags --libs poolkit)
string(STRIP "${run_output}" flags)
string(REPLACE "-lpoolkit" "${libdir}/libpoolkit.a" flags "${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run(COMMAND ${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${consumer_src}/consumer.c
    ${flags} -o ${WORK_DIR}/consumer_cli_static)
run(COMMAND ${WORK_DIR}/consumer_cli_static)

message(STATUS "install test: passed (prefix ${prefix})")
