"""Conan 2 recipe for poolkit, kept with the sources it packages.

    conan create packaging/conan                      # the static library
    conan create packaging/conan -o "&:shared=True"   # the shared one

The sources are the checkout this file lives in (export_sources copies what
the library's build needs, nothing of the tests, lab or benchmarks). The
package is the library's own CMake install: consumers get CMakeDeps'
poolkit::poolkit (find_package(poolkit)) and PkgConfigDeps' poolkit.pc.
scripts/package-test.sh runs `conan create` in a scratch Conan home, and
test_package/ builds and runs a C program against the result.
"""
import os

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy



def _repo(recipe_folder):
    """The checkout this recipe lives in (packaging/conan/..)."""
    return os.path.normpath(os.path.join(recipe_folder, "..", ".."))


def _version(repo):
    """PK_VERSION_STRING of include/poolkit/poolkit.h, the version's one home."""
    with open(os.path.join(repo, "include", "poolkit", "poolkit.h"), encoding="utf-8") as header:
        lines = header.read().splitlines()
    for line in lines:
        if line.startswith("#define PK_VERSION_STRING"):
            return line.split('"')[1]
    raise ValueError("no PK_VERSION_STRING in include/poolkit/poolkit.h")


class PoolkitConan(ConanFile):
    name = "poolkit"
    license = "MIT"
    description = "Fast object pools, arenas and reference-counted objects for C"
    topics = ("allocator", "memory-pool", "arena", "reference-counting")
    settings = "os", "arch", "compiler", "build_type"
    options = {"shared": [True, False], "fPIC": [True, False]}
    default_options = {"shared": False, "fPIC": True}
    # A C library (the C++ interface is a header over it).
    languages = "C"

    def set_version(self):
        self.version = self.version or _version(_repo(self.recipe_folder))

    def export_sources(self):
        for pattern in ("CMakeLists.txt", "LICENSE", "CHANGELOG.md", "poolkit.pc.in",
                        "poolkit-static.pc.in", "cmake/*", "src/*", "include/*",
                        "docs/stats.schema.json", "bindings/objc/PKObject.h"):
            copy(self, pattern, _repo(self.recipe_folder), self.export_sources_folder)

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")
        self.settings.rm_safe("compiler.cppstd")
        self.settings.rm_safe("compiler.libcxx")

    def layout(self):
        cmake_layout(self)

    def generate(self):
        tc = CMakeToolchain(self)
        for part in ("TESTS", "BENCH", "LAB", "EXAMPLES"):
            tc.cache_variables["POOLKIT_BUILD_" + part] = False
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build(target="poolkit_shared" if self.options.shared else "poolkit")

    def package(self):
        cmake = CMake(self)
        # The library asked for (and its CMake targets), the headers and docs.
        for component in ("dev", "runtime", "shared") if self.options.shared else ("dev", "static"):
            cmake.install(component=component)

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "poolkit")
        self.cpp_info.set_property("cmake_target_name", "poolkit::poolkit")
        self.cpp_info.set_property("pkg_config_name", "poolkit")
        self.cpp_info.libs = ["poolkit"]
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs = ["pthread"]
