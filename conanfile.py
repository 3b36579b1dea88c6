# Conan 2 recipe for baton (header-only), after Conan Center's header-only
# template: `conan create .` packages include/ and runs packaging/conan/test_package.
# The Conan client is not available where baton's CI runs; CI builds and runs the
# test_package's sources with CMake against `meson install`'s tree instead
# (tests/consumer/installed.sh), which checks the same find_package contract.
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout

required_conan_version = ">=2.0"


class BatonConan(ConanFile):
    name = "baton"
    description = ("Leases with fencing tokens, leader election, fenced writes and a versioned "
                   "key-value store over S3 and DynamoDB conditional writes, for Asio")
    license = "BSL-1.0"
    topics = ("s3", "dynamodb", "lease", "leader-election", "fencing", "asio", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    no_copy_source = True
    exports = "meson.build"
    exports_sources = "include/*", "LICENSE_1_0.txt"
    test_package_folder = "packaging/conan/test_package"

    def set_version(self):
        # One version, meson.build's: project('baton', ..., version: 'X.Y.Z').
        text = load(self, os.path.join(self.recipe_folder, "meson.build"))
        self.version = self.version or re.search(r"version:\s*'([^']+)'", text).group(1)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        # Boost.JSON and Boost.URL are compiled Boost libraries (1.81 is the first with URL);
        # OpenSSL 3 signs (libcrypto) and speaks TLS (libssl). Headers and libs both reach users.
        self.requires("boost/[>=1.81.0 <2]", transitive_headers=True, transitive_libs=True)
        self.requires("openssl/[>=3.0 <4]", transitive_headers=True, transitive_libs=True)

    def package_id(self):
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, 20)

    def build(self):
        pass

    def package(self):
        copy(self, "LICENSE_1_0.txt", self.source_folder, os.path.join(self.package_folder, "licenses"))
        for pattern in ("*.hpp", "*.ipp"):
            copy(self, pattern, os.path.join(self.source_folder, "include"),
                 os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []
        self.cpp_info.set_property("cmake_file_name", "baton")
        self.cpp_info.set_property("cmake_target_name", "baton::baton")
        self.cpp_info.set_property("pkg_config_name", "baton")
        self.cpp_info.requires = ["boost::headers", "boost::json", "boost::url", "openssl::ssl", "openssl::crypto"]
        if self.settings.os in ["Linux", "FreeBSD"]:
            self.cpp_info.system_libs = ["pthread"]
