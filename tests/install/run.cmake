# The install test: installs a poolkit build into a scratch prefix, checks
# what landed there, then builds and runs tests/install/consumer.c against it
# four ways, pkg-config (poolkit.pc, poolkit-static.pc) and find_package
# (poolkit::shared, poolkit::static, and poolkit::poolkit), through CMake and
# on a plain compiler command line, and checks that each program linked the
# library it asked for (readelf: libpoolkit.so.0 needed, or not). Where
# GNUstep is installed, the Objective-C binding is built into the build
# directory first (bindings/objc/build.sh), installed, and an Objective-C
# program is built on the installed copy.
#
#   cmake -DPOOLKIT_BUILD_DIR=... -DPOOLKIT_SOURCE_DIR=... -DWORK_DIR=...
#         [-DC_COMPILER=cc] [-DCXX_COMPILER=c++] [-DGENERATOR=Ninja] -P run.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var POOLKIT_BUILD_DIR POOLKIT_SOURCE_DIR WORK_DIR)
    if(NOT ${var})
        message(FATAL_ERROR "run.cmake: -D${var}=... is required")
    endif()
endforeach()
if(NOT C_COMPILER)
    set(C_COMPILER cc)
endif()
if(NOT CXX_COMPILER)
    set(CXX_COMPILER c++)
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

# expect_linked(PROGRAM shared|static): PROGRAM needs libpoolkit.so.0
# (shared) or does not (static: the archive is inside it).
find_program(READELF readelf REQUIRED)
function(expect_linked program kind)
    run(COMMAND ${READELF} -d ${program})
    if(run_output MATCHES "NEEDED[^\n]*\\[libpoolkit\\.so")
        set(got shared)
    else()
        set(got static)
    endif()
    if(NOT got STREQUAL kind)
        message(FATAL_ERROR "install test: ${program} asked for the ${kind} library and "
                            "linked the ${got} one:\n${run_output}")
    endif()
    message(STATUS "install test: ${program}: ${kind}, as asked")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# 0. The Objective-C binding, where GNUstep is installed: `make install`
#    builds it the same way before installing.
find_program(GNUSTEP_CONFIG gnustep-config)
if(GNUSTEP_CONFIG)
    run(COMMAND sh ${POOLKIT_SOURCE_DIR}/bindings/objc/build.sh
        ${POOLKIT_BUILD_DIR}/objc ${POOLKIT_BUILD_DIR})
else()
    message(STATUS "install test: GNUstep not installed: libpoolkit-objc not built, "
                   "PKObject.h installed alone")
endif()

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
set(objc_lib "")
if(GNUSTEP_CONFIG)
    set(objc_lib ${libdir}/libpoolkit-objc.a)
endif()
foreach(f
        ${prefix}/include/poolkit/poolkit.h
        ${prefix}/include/poolkit/pool.h
        ${prefix}/include/poolkit/alloc.h
        ${libdir}/libpoolkit-malloc.so
        ${libdir}/libpoolkit-malloc.so.0
        ${libdir}/libpoolkit-malloc.so.0.1.0
        ${libdir}/libpoolkit.a
        ${libdir}/libpoolkit.so
        ${libdir}/libpoolkit.so.0
        ${libdir}/libpoolkit.so.0.1.0
        ${libdir}/poolkit-static/libpoolkit.a
        ${libdir}/pkgconfig/poolkit.pc
        ${libdir}/pkgconfig/poolkit-static.pc
        ${libdir}/cmake/poolkit/poolkitConfig.cmake
        ${libdir}/cmake/poolkit/poolkitConfigVersion.cmake
        ${prefix}/include/poolkit/PKObject.h
        ${prefix}/share/poolkit/stats.schema.json
        ${prefix}/share/doc/poolkit/LICENSE
        ${prefix}/share/doc/poolkit/CHANGELOG.md
        ${libdir}/cmake/poolkit/poolkit-static-targets.cmake
        ${libdir}/cmake/poolkit/poolkit-shared-targets.cmake
        ${objc_lib})
    if(NOT EXISTS ${f})
        message(FATAL_ERROR "install test: missing ${f}")
    endif()
endforeach()

# 2b. The .pc files name the install's prefix and derive the rest from it
#     (${prefix}-relative, as packagers expect), not from their own place.
file(RELATIVE_PATH rel_libdir ${prefix} ${libdir})
foreach(pc poolkit poolkit-static)
    file(READ ${libdir}/pkgconfig/${pc}.pc text)
    foreach(line "prefix=${prefix}\n" "libdir=\${prefix}/${rel_libdir}\n" "includedir=\${prefix}/include\n")
        string(FIND "${text}" "${line}" at)
        if(at EQUAL -1)
            message(FATAL_ERROR "install test: ${pc}.pc lacks the line '${line}':\n${text}")
        endif()
    endforeach()
endforeach()

# 3. Only public names (pk_...) are global in either library: the static one
#    must not hand its internal names to the programs that link it; and
#    libpoolkit-malloc.so exports those, the malloc family (with glibc's
#    __libc_ names of it) and the global
#    operator new and delete (their mangled names: _Znw, _Zna, _Zdl, _Zda),
#    nothing else.
set(malloc_family malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign
    valloc pvalloc malloc_usable_size malloc_trim __libc_malloc __libc_free __libc_calloc __libc_realloc
    __libc_memalign __libc_valloc __libc_pvalloc)
find_program(NM nm)
if(NM)
    foreach(check "libpoolkit.a;-g;--defined-only" "libpoolkit.so;-D;--defined-only"
                  "libpoolkit-malloc.so;-D;--defined-only")
        list(POP_FRONT check lib)
        run(COMMAND ${NM} ${check} ${libdir}/${lib})
        string(REPLACE "\n" ";" lines "${run_output}")
        set(leaked "")
        foreach(line IN LISTS lines)
            if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ ]+)$")
                set(sym ${CMAKE_MATCH_1})
                if(NOT sym MATCHES "^pk_" AND NOT (lib STREQUAL "libpoolkit-malloc.so" AND
                                                    (sym IN_LIST malloc_family OR sym MATCHES "^_Z(nw|na|dl|da)")))
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

# 4. find_package(poolkit): poolkit::shared, poolkit::static and
#    poolkit::poolkit (the static library).
run(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/find-package
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DPOOLKIT_FIND=cmake)
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/find-package)
foreach(kind shared static default)
    run(COMMAND ${WORK_DIR}/find-package/consumer_cmake_${kind})
endforeach()
expect_linked(${WORK_DIR}/find-package/consumer_cmake_shared shared)
expect_linked(${WORK_DIR}/find-package/consumer_cmake_static static)
expect_linked(${WORK_DIR}/find-package/consumer_cmake_default static)

# 4b. Installs of one library, by install component, as a distribution
#     that ships only the static or only the shared library has:
#     find_package still works, poolkit::poolkit names the one installed.
foreach(kind static shared)
    set(one ${WORK_DIR}/prefix-${kind})
    set(components dev ${kind})
    if(kind STREQUAL "shared")
        list(APPEND components runtime)
    endif()
    foreach(component IN LISTS components)
        run(COMMAND ${CMAKE_COMMAND} --install ${POOLKIT_BUILD_DIR} --prefix ${one} --component ${component})
    endforeach()
    if(kind STREQUAL "static")
        file(GLOB_RECURSE other_kind ${one}/*libpoolkit.so* ${one}/*/poolkit.pc ${one}/*poolkit-shared-targets*)
    else()
        file(GLOB_RECURSE other_kind ${one}/*libpoolkit.a ${one}/*poolkit-static.pc ${one}/*poolkit-static-targets*)
    endif()
    if(other_kind)
        message(FATAL_ERROR "install test: the ${kind} components installed the other library's files: ${other_kind}")
    endif()
    run(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/find-${kind}-only
        -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
        -DCMAKE_PREFIX_PATH=${one} -DPOOLKIT_FIND=cmake-one -DPOOLKIT_KIND=${kind})
    run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/find-${kind}-only)
    foreach(program consumer_one_kind consumer_one_default)
        run(COMMAND ${WORK_DIR}/find-${kind}-only/${program})
        expect_linked(${WORK_DIR}/find-${kind}-only/${program} ${kind})
    endforeach()
endforeach()

# 5. pkg-config through CMake's FindPkgConfig: poolkit and poolkit-static.
set(ENV{PKG_CONFIG_PATH} ${libdir}/pkgconfig)
run(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/pkg-config
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release
    -DPOOLKIT_FIND=pkg-config)
run(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/pkg-config)
foreach(kind shared static)
    run(COMMAND ${WORK_DIR}/pkg-config/consumer_pc_${kind})
    expect_linked(${WORK_DIR}/pkg-config/consumer_pc_${kind} ${kind})
endforeach()

# 6. pkg-config on a plain command line, as a Makefile would use it (the
#    README's commands): cc consumer.c $(pkg-config --cflags --libs poolkit),
#    and the same with poolkit-static.
find_program(PKG_CONFIG pkg-config REQUIRED)
foreach(kind shared static)
    set(module poolkit)
    set(rpath -Wl,-rpath,${libdir})
    if(kind STREQUAL "static")
        set(module poolkit-static)
        set(rpath "")
    endif()
    run(COMMAND ${PKG_CONFIG} --cflags --libs ${module})
    string(STRIP "${run_output}" flags)
    separate_arguments(flags UNIX_COMMAND "${flags}")
    run(COMMAND ${C_COMPILER} -std=c11 -Wall -Wextra -Werror ${consumer_src}/consumer.c
        ${flags} ${rpath} -o ${WORK_DIR}/consumer_cli_${kind})
    run(COMMAND ${WORK_DIR}/consumer_cli_${kind})
    expect_linked(${WORK_DIR}/consumer_cli_${kind} ${kind})
    # C++ on the installed poolkit.hpp, as examples/README.md builds it.
    run(COMMAND ${CXX_COMPILER} -std=c++17 -Wall -Wextra -Werror
        ${POOLKIT_SOURCE_DIR}/examples/cpp_tour.cpp ${flags} ${rpath}
        -o ${WORK_DIR}/consumer_cxx_${kind})
    run(COMMAND ${WORK_DIR}/consumer_cxx_${kind})
    expect_linked(${WORK_DIR}/consumer_cxx_${kind} ${kind})
endforeach()

# 7. Objective-C on the installed PKObject.h and libpoolkit-objc.a, with the
#    README's command: gnustep-config's flags, the binding's archive, then
#    poolkit-static and gnustep-base.
if(GNUSTEP_CONFIG)
    run(COMMAND ${GNUSTEP_CONFIG} --objc-flags)
    string(STRIP "${run_output}" objc_flags)
    separate_arguments(objc_flags UNIX_COMMAND "${objc_flags}")
    list(REMOVE_ITEM objc_flags -MMD -MP)
    run(COMMAND ${GNUSTEP_CONFIG} --base-libs)
    string(STRIP "${run_output}" base_libs)
    separate_arguments(base_libs UNIX_COMMAND "${base_libs}")
    run(COMMAND ${PKG_CONFIG} --cflags poolkit)
    string(STRIP "${run_output}" pk_cflags)
    separate_arguments(pk_cflags UNIX_COMMAND "${pk_cflags}")
    run(COMMAND ${PKG_CONFIG} --libs poolkit-static)
    string(STRIP "${run_output}" pk_libs)
    separate_arguments(pk_libs UNIX_COMMAND "${pk_libs}")
    run(COMMAND ${PKG_CONFIG} --variable=libdir poolkit)
    string(STRIP "${run_output}" pc_libdir)
    run(COMMAND gcc -std=gnu11 ${objc_flags} ${pk_cflags} ${POOLKIT_SOURCE_DIR}/examples/objc_class.m
        ${pc_libdir}/libpoolkit-objc.a ${pk_libs} ${base_libs} -o ${WORK_DIR}/consumer_objc)
    run(COMMAND ${WORK_DIR}/consumer_objc)
    expect_linked(${WORK_DIR}/consumer_objc static)
endif()

message(STATUS "install test: passed (prefix ${prefix})")
