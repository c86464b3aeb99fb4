"""The checker of tools/module_rules.py on small projects made for each case.

    module_rules_tests.py CHECKER
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

CHECKER = sys.argv.pop(1)


class ModuleRules(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.units = []

    def write(self, name, text):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
        return path

    def unit(self, name, text, include_dirs=()):
        path = self.write(name, text)
        flags = " ".join(f"-I{os.path.join(self.root, d)}" for d in include_dirs)
        self.units.append({"directory": self.root, "file": path,
                           "command": f"clang++ -std=c++20 {flags} -c {path}"})

    def check(self):
        commands = os.path.join(self.root, "compile_commands.json")
        with open(commands, "w", encoding="utf-8") as f:
            json.dump(self.units, f)
        result = subprocess.run([sys.executable, CHECKER, commands, self.root], capture_output=True, text=True)
        return result.returncode, result.stdout

    def test_includes_before_imports_pass(self):
        self.unit("a.cpp", """
            #include <string>
            #include "b.hpp"
            import m;
            import n;
            """)
        self.write("b.hpp", "#pragma once\n#include <vector>\n")
        self.assertEqual(self.check(), (0, ""))

    def test_an_include_after_an_import_is_a_breach(self):
        self.unit("a.cpp", """
            #include <string>
            import m;
            #include <vector>
            """)
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "a.cpp:4: #include <vector> after the import or module declaration at a.cpp:3\n")

    def test_an_outside_header_after_a_header_that_imports_is_a_breach(self):
        self.unit("src/a.cpp", """
            #include "imports.hpp"
            #include <vector>
            """, include_dirs=["include"])
        self.write("include/imports.hpp", "#pragma once\n#include <string>\nimport m;\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, 'src/a.cpp:3: #include <vector> after the import or module declaration at include/imports.hpp:3\n')

    def test_an_outside_header_repeated_after_an_import_passes(self):
        self.unit("a.cpp", """
            #include <string>
            import m;
            #include <string>
            """)
        self.assertEqual(self.check(), (0, ""))

    def test_a_project_header_after_an_import_passes_when_it_brings_no_new_outside_header(self):
        self.unit("a.cpp", """
            #include <string>
            import m;
            #include "plain.hpp"
            """)
        self.write("plain.hpp", "#pragma once\n#include <string>\nimport m;\nstruct Plain { std::string name; };\n")
        self.assertEqual(self.check(), (0, ""))

    def test_a_project_header_after_an_import_that_brings_a_new_outside_header_is_a_breach(self):
        self.unit("a.cpp", """
            import m;
            #include "plain.hpp"
            """)
        self.write("plain.hpp", "#pragma once\n#include <vector>\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "plain.hpp:2: #include <vector> after the import or module declaration at a.cpp:2 (included from a.cpp:3)\n")

    def test_a_project_header_a_global_module_fragment_includes_is_a_breach_after_an_import(self):
        self.unit("m.cppm", """
            module;
            #include "shared.hpp"
            export module m;
            """)
        self.unit("a.cpp", """
            import m;
            #include "shared.hpp"
            """)
        self.write("shared.hpp", "#pragma once\nstruct Shared {};\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, 'a.cpp:3: #include "shared.hpp", which a global module fragment includes, after the import or module declaration at a.cpp:2\n')

    def test_a_header_that_includes_after_its_import_is_a_breach_where_included(self):
        self.unit("a.cpp", '#include "late.hpp"\n')
        self.write("late.hpp", "#pragma once\nimport m;\n#include <string>\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "late.hpp:3: #include <string> after the import or module declaration at late.hpp:2 (included from a.cpp:1)\n")

    def test_a_header_in_angle_brackets_is_followed_through_the_include_folders(self):
        self.unit("a.cpp", "#include <lib/imports.hpp>\n#include <string>\n", include_dirs=["include"])
        self.write("include/lib/imports.hpp", "#pragma once\nimport m;\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertIn("a.cpp:2: #include <string> after the import or module declaration at include/lib/imports.hpp:2", out)

    def test_the_global_module_fragment_holds_includes(self):
        self.unit("m.cppm", """
            module;
            #include <string>
            export module m;
            import n;
            """)
        self.assertEqual(self.check(), (0, ""))

    def test_an_include_after_a_module_declaration_is_a_breach(self):
        self.unit("m.cpp", """
            module;
            #include <string>
            module m;
            #include <vector>
            """)
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "m.cpp:5: #include <vector> after the import or module declaration at m.cpp:4\n")

    def test_an_import_in_a_comment_is_no_import(self):
        self.unit("a.cpp", """
            // import m;
            /* import n;
               import o; */
            #include <string>
            """)
        self.assertEqual(self.check(), (0, ""))

    def test_an_interface_partition_exported_by_its_primary_interface_passes(self):
        self.unit("m.cppm", "export module m;\nexport import :p;\n")
        self.unit("p.cppm", "export module m:p;\n")
        self.assertEqual(self.check(), (0, ""))

    def test_an_interface_partition_not_exported_is_a_breach(self):
        self.unit("m.cppm", "export module m;\nimport :p;\n")
        self.unit("p.cppm", "export module m:p;\n")
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "p.cppm:1: interface partition m:p is not exported by m.cppm (export import :p;)\n")

    def test_an_implementation_partition_needs_no_export(self):
        self.unit("m.cppm", "export module m;\nimport :detail;\n")
        self.unit("detail.cppm", "module m:detail;\n")
        self.assertEqual(self.check(), (0, ""))

    def test_a_macro_defined_in_a_global_module_fragment_is_a_breach(self):
        self.unit("m.cpp", """
            module;
            #define XXH_INLINE_ALL
            #include <xxhash.h>
            module m;
            """)
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertEqual(out, "m.cpp:3: #define XXH_INLINE_ALL in the global module fragment of a module unit\n")

    def test_a_macro_defined_in_a_unit_that_is_no_module_unit_passes(self):
        self.unit("a.cpp", """
            #define XXH_INLINE_ALL
            #include <xxhash.h>
            """)
        self.assertEqual(self.check(), (0, ""))


if __name__ == "__main__":
    unittest.main()
