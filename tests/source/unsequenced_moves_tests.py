"""The checker of tools/unsequenced_moves.py on small sources made for each case.

    unsequenced_moves_tests.py CHECKER
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

CHECKER = sys.argv.pop(1)


class UnsequencedMoves(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def write(self, name, text):
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))

    def check(self, *folders):
        result = subprocess.run([sys.executable, CHECKER, self.root, *(folders or ["src"])],
                                capture_output=True, text=True)
        return result.returncode, result.stdout

    def findings(self, body):
        self.write("src/a.cpp", body)
        code, out = self.check()
        self.assertEqual(code, 1 if out else 0)
        return out.splitlines()

    def test_an_argument_that_uses_what_another_moves_is_a_finding(self):
        self.write("src/a.cpp", """
            void answer(std::string body) {
              respond(200, serialize(body),
                      [body = std::move(body)] { finish(body); });
            }
            """)
        self.assertEqual(self.check(), (1, "src/a.cpp:4: argument 3 of the call to respond (line 3) moves 'body' "
                                           "and argument 2 uses it (line 3); the order is unspecified\n"))

    def test_a_conditional_operator_in_another_argument_hides_nothing(self):
        self.assertEqual(len(self.findings("""
            void answer(std::string body, bool flag) {
              respond(serialize(body), flag ? metrics() : Metrics{}, [body = std::move(body)] {});
            }
            """)), 1)

    def test_a_move_in_a_nested_call_counts(self):
        self.assertEqual(len(self.findings("void f(T x) { g(wrap(std::move(x)), x.size()); }\n")), 1)

    def test_std_forward_counts(self):
        self.assertEqual(len(self.findings(
            "template <class T> void f(T&& x) { g(std::forward<T>(x), x); }\n")), 1)
        self.assertEqual(len(self.findings("void f(auto&& x) { g(std::forward<decltype(x)>(x), x); }\n")), 1)

    def test_a_member_path_is_used_by_what_is_in_it_and_by_its_object_as_a_whole(self):
        self.assertEqual(len(self.findings("void f(G g) { h(std::move(g.body), g.body.size()); }\n")), 1)
        self.assertEqual(len(self.findings("void f(G g) { h(std::move(g.body), g); }\n")), 1)
        self.assertEqual(len(self.findings("void f(G* g) { h(std::move(g->body), g->body); }\n")), 1)
        self.assertEqual(len(self.findings("void f(G g) { h(std::move(g.body), g.elapsed()); }\n")), 1)

    def test_a_sibling_member_or_a_namesake_member_is_no_use(self):
        self.assertEqual(self.findings("void f(G g) { h(std::move(g.body), g.plan); }\n"), [])
        self.assertEqual(self.findings("void f(G g, std::string body) { h(std::move(body), g.body); }\n"), [])

    def test_a_braced_list_is_evaluated_in_order(self):
        self.assertEqual(self.findings("void f(std::string s) { Pair p{s.size(), std::move(s)}; }\n"), [])

    def test_a_move_inside_a_lambda_body_runs_later(self):
        self.assertEqual(self.findings(
            "void f(std::string s) { post(s.size(), [&] { consume(std::move(s)); }); }\n"), [])

    def test_a_move_and_a_use_in_separate_statements_are_sequenced(self):
        self.assertEqual(self.findings("void f(std::string s) { auto n = size(s); consume(std::move(s)); }\n"), [])

    def test_comments_literals_and_preprocessor_lines_are_skipped(self):
        self.assertEqual(self.findings("""
            #define CALL(x) g(std::move(x), x)
            void f(std::string s) {
              g(std::move(s), "s", R"(s)", 's');  // g(std::move(s), s)
              /* g(std::move(s), s) */
            }
            """), [])

    def test_condition_parentheses_are_no_call(self):
        self.assertEqual(self.findings("void f(T s) { if (consume(std::move(s)), s) {} }\n"), [])

    def test_every_source_kind_under_the_folders_is_read_and_nothing_else(self):
        self.write("src/deep/b.hpp", "inline void f(T x) { g(std::move(x), x); }\n")
        self.write("src/m.cppm", "export void f(T x) { g(std::move(x), x); }\n")
        self.write("other/c.cpp", "void f(T x) { g(std::move(x), x); }\n")
        code, out = self.check("src")
        self.assertEqual(code, 1)
        self.assertEqual([line.split(":")[0] for line in out.splitlines()], ["src/deep/b.hpp", "src/m.cppm"])

    def test_a_folder_with_no_source_is_an_error(self):
        os.makedirs(os.path.join(self.root, "empty"))
        result = subprocess.run([sys.executable, CHECKER, self.root, "empty"], capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no C++ source under empty", result.stderr)


if __name__ == "__main__":
    unittest.main()
