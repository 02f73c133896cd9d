"""tools/check_layers.py: it passes on ebb's tree and catches each kind of violation."""
import pathlib
import subprocess
import sys

TOOLS = pathlib.Path(__file__).resolve().parents[1]
REPO = TOOLS.parent


def run(root):
    return subprocess.run([sys.executable, str(TOOLS / "check_layers.py"), str(root)],
                          capture_output=True, text=True)


def tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / "include" / "ebb").mkdir(parents=True, exist_ok=True)
    (tmp_path / "src").mkdir(exist_ok=True)
    return tmp_path


def test_the_repository_is_clean():
    r = run(REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_lower_folder_including_a_higher_one_fails(tmp_path):
    root = tree(tmp_path, {"src/model/model.cpp": '#include "runtime/runtime_state.h"\n',
                           "src/runtime/runtime_state.h": "\n"})
    r = run(root)
    assert r.returncode == 1
    assert "src/runtime/ (band 5) is above src/model/ (band 3)" in r.stdout


def test_parts_of_one_band_may_not_include_each_other(tmp_path):
    root = tree(tmp_path, {"src/kv/kv_pool.cpp": '#include "memory/heap_trim.h"\n',
                           "src/memory/heap_trim.h": "\n"})
    assert run(root).returncode == 1


def test_public_headers_expose_no_internals(tmp_path):
    root = tree(tmp_path, {"include/ebb/model.h": "namespace internal { struct X; }\n",
                           "include/ebb/generation.h": '#include "model/model_impl.h"\n'})
    r = run(root)
    assert r.returncode == 1
    assert "exposes ebb's internals" in r.stdout
    assert "may include only ebb/ headers" in r.stdout


def test_an_unknown_folder_is_an_error(tmp_path):
    root = tree(tmp_path, {"src/newthing/a.cpp": "\n"})
    assert run(root).returncode == 2


def copy_of_the_tree(tmp_path):
    """src/ and include/ebb/ of the repository, for planting one violation in."""
    import shutil
    for part in ("src", "include"):
        shutil.copytree(REPO / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("*.o", "*.a", "*.so"))
    return tmp_path


def test_a_public_header_including_a_higher_layers_header_fails(tmp_path):
    # Issue 22: public headers had no band, so ebb/model.h could include ebb/runtime.h unseen.
    root = copy_of_the_tree(tmp_path)
    assert run(root).returncode == 0
    model_h = root / "include" / "ebb" / "model.h"
    model_h.write_text('#include "ebb/runtime.h"\n' + model_h.read_text())
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ('include/ebb/model.h includes "ebb/runtime.h": include/ebb/runtime.h (implemented in '
            'src/runtime/) (band 5) is above src/model/ (band 3)') in r.stdout
    assert "check_layers: 1 violation(s)" in r.stdout


def test_a_source_file_including_a_higher_layers_public_header_fails(tmp_path):
    root = copy_of_the_tree(tmp_path)
    kv = next((root / "src" / "kv").glob("*.cpp"))
    kv.write_text('#include "ebb/generator.h"\n' + kv.read_text())
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert "include/ebb/generator.h (implemented in src/generate/) (band 4) is above src/kv/" in r.stdout


def test_a_public_header_without_a_band_is_an_error(tmp_path):
    root = tree(tmp_path, {"include/ebb/new_thing.h": "\n"})
    r = run(root)
    assert r.returncode == 2
    assert "include/ebb/new_thing.h has no band" in r.stderr


def test_the_genai_surface_uses_only_the_public_api(tmp_path):
    root = tree(tmp_path, {"genai/src/oga_model.cpp": '#include "ebb/model.h"\n'
                                                      '#include "oga_internal.h"\n'
                                                      '#include "model/model_impl.h"\n',
                           "src/model/model_impl.h": "\n"})
    r = run(root)
    assert r.returncode == 1
    assert 'genai/src/oga_model.cpp includes "model/model_impl.h"' in r.stdout
    assert "ebb/model.h" not in r.stdout and "oga_internal.h" not in r.stdout


def test_the_python_module_uses_only_the_public_api(tmp_path):
    # Issue 38: python/src/module.cpp included runtime/stats_json.h while saying it used only the
    # public API; python/src was not checked.
    root = copy_of_the_tree(tmp_path)
    module = root / "python" / "src" / "module.cpp"
    module.parent.mkdir(parents=True)
    module.write_text((REPO / "python" / "src" / "module.cpp").read_text())
    assert run(root).returncode == 0
    module.write_text('#include "runtime/stats_json.h"\n' + module.read_text())
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ('python/src/module.cpp includes "runtime/stats_json.h": python/src/ uses only the '
            'public API') in r.stdout
    assert "check_layers: 1 violation(s)" in r.stdout


def test_a_definition_in_a_higher_band_than_its_declaration_fails(tmp_path):
    # Issue 38: Model::Load was declared in ebb/model.h (band 3) and defined in src/runtime/
    # (band 5); the include check could not see it.
    root = copy_of_the_tree(tmp_path)
    runtime_cpp = root / "src" / "runtime" / "runtime.cpp"
    runtime_cpp.write_text(runtime_cpp.read_text() + "\nnamespace ebb {\n"
                           "const ModelInfo& Model::info() const { return info_; }\n"
                           "}  // namespace ebb\n")
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ("src/runtime/runtime.cpp defines Model::info, declared in include/ebb/model.h "
            "(band 3) below src/runtime/ (band 5)") in r.stdout
    assert "check_layers: 1 violation(s)" in r.stdout


def test_an_exported_function_defined_in_a_higher_band_fails_but_a_local_namesake_does_not(
        tmp_path):
    root = copy_of_the_tree(tmp_path)
    server = root / "src" / "server" / "routes.cpp"
    server.write_text(server.read_text() + "\nnamespace ebb {\nnamespace {\n"
                      "int ReadProcessMemory(int x) { return x; }  // a file's own helper\n"
                      "}  // namespace\n}  // namespace ebb\n")
    assert run(root).returncode == 0, run(root).stdout
    server.write_text(server.read_text() + "\nnamespace ebb {\n"
                      "ProcessMemory ReadProcessMemory() { return {}; }\n}  // namespace ebb\n")
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ("src/server/routes.cpp defines ReadProcessMemory(), declared in "
            "include/ebb/process_memory.h (band 2) below src/server/ (band 6)") in r.stdout


def test_a_friend_across_bands_fails(tmp_path):
    root = copy_of_the_tree(tmp_path)
    runtime_h = root / "include" / "ebb" / "runtime.h"
    text = runtime_h.read_text()
    runtime_h.write_text(text.replace(" private:\n", " private:\n  friend class Model;\n", 1))
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert ("include/ebb/runtime.h makes Model (include/ebb/model.h, band 3) a friend: a friend "
            "may not cross a band") in r.stdout


def test_the_root_bench_may_measure_any_part_but_its_llamacpp_probe_only_the_public_api(tmp_path):
    root = tree(tmp_path, {"bench/pool_bench.cpp": '#include "kv/kv_pool.h"\n',
                           "bench/llamacpp/ebb_probe.cpp": '#include "ebb/model.h"\n'
                                                           '#include "kv/kv_pool.h"\n',
                           "src/kv/kv_pool.h": "\n"})
    r = run(root)
    assert r.returncode == 1
    assert 'bench/llamacpp/ebb_probe.cpp includes "kv/kv_pool.h"' in r.stdout
    assert "pool_bench" not in r.stdout


def test_model_impl_is_private_to_the_model_folder(tmp_path):
    # Issue 38: cli/load_progress.cpp and runtime/model_manager.cpp included the whole ModelImpl
    # for two folder helpers (now in model/model_info.h); generate/, embed/ and runtime/ use the
    # views of model/model_views.h.
    root = copy_of_the_tree(tmp_path)
    for rel in ("src/cli/load_progress.cpp", "src/generate/generator.cpp"):
        f = root / rel
        f.write_text('#include "model/model_impl.h"\n' + f.read_text())
    r = run(root)
    assert r.returncode == 1, r.stdout
    for rel in ("src/cli/load_progress.cpp", "src/generate/generator.cpp"):
        assert f'{rel} includes "model/model_impl.h": only model/ may' in r.stdout


def test_tests_and_benchmarks_use_the_views_too(tmp_path):
    root = copy_of_the_tree(tmp_path)
    for rel in ("tests/integration/planted_test.cpp", "bench/planted_bench.cpp"):
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text('#include "model/model_impl.h"\n')
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert 'tests/integration/planted_test.cpp includes "model/model_impl.h"' in r.stdout
    assert 'bench/planted_bench.cpp includes "model/model_impl.h"' in r.stdout


def test_only_the_platform_folder_calls_the_operating_system(tmp_path):
    # Issue 38: the platform seam. An OS header or a /proc read anywhere else is refused; the
    # same in src/platform/ is its job.
    root = copy_of_the_tree(tmp_path)
    kv = root / "src" / "kv" / "kv_pool.cpp"
    kv.write_text("#include <sys/mman.h>\n" + kv.read_text())
    mem = root / "src" / "memory" / "process_memory.cpp"
    mem.write_text(mem.read_text() + '\nstatic const char* kStatus = "/proc/self/status";\n')
    comment = root / "src" / "core" / "pages.cpp"
    comment.write_text(comment.read_text() + '\n// reads "/proc/self/smaps" through platform/\n')
    plat = root / "src" / "platform" / "linux" / "vm.cpp"
    plat.write_text("#include <sys/mman.h>\n" + plat.read_text())
    r = run(root)
    assert r.returncode == 1, r.stdout
    assert "src/kv/kv_pool.cpp includes <sys/mman.h>: only src/platform/" in r.stdout
    assert "src/memory/process_memory.cpp names a /proc or /sys path" in r.stdout
    assert "pages.cpp" not in r.stdout
    assert "platform/linux/vm.cpp" not in r.stdout
