// The platform seam's system, process, file, network and library calls (src/platform/*.h) on
// this machine, and the Linux implementation's /proc text parsers (platform/linux/proc_text.h)
// on made-up text.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "platform/dynlib.h"
#include "platform/file.h"
#include "platform/heap.h"
#include "platform/linux/proc_text.h"
#include "platform/memory_pressure.h"
#include "platform/net.h"
#include "platform/process.h"
#include "platform/system_info.h"

namespace ebb::platform {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("ebb-platform-" + std::to_string(CurrentPid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `argv` detached with its output in `log`; fails the test when it cannot.
int64_t Spawn(const std::vector<std::string>& argv, const fs::path& log, const fs::path& cwd = {}) {
  DetachedSpawn s;
  s.exe = argv[0];
  s.argv = argv;
  s.log = log;
  s.cwd = cwd;
  s.cwd_failure_line = "no cwd\n";
  s.exec_failure_line = "no exec\n";
  const SpawnResult r = SpawnDetached(s);
  EXPECT_EQ(r.failed, SpawnResult::kNone) << r.error;
  EXPECT_GT(r.pid, 0);
  return r.pid;
}

// Polls the child until it ends (at most 10 s).
ChildExit WaitEnded(int64_t pid) {
  ChildExit exit;
  for (int i = 0; i < 1000; ++i) {
    const ChildState st = PollChild(pid, &exit);
    if (st == ChildState::kEnded) return exit;
    EXPECT_EQ(st, ChildState::kRunning);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "child " << pid << " did not end";
  return exit;
}

TEST(PlatformProcess, SelfIsAliveWithAStableStartTimeAndItsName) {
  const int64_t self = CurrentPid();
  EXPECT_GT(self, 0);
  EXPECT_TRUE(ProcessAlive(self));
  EXPECT_FALSE(ProcessAlive(0));
  EXPECT_FALSE(ProcessAlive(-1));
  const auto t1 = ProcessStartTime(self);
  ASSERT_TRUE(t1.has_value());
  EXPECT_EQ(ProcessStartTime(self), t1) << "a process's start time does not change";
  EXPECT_FALSE(ProcessStartTime(0).has_value());
  std::error_code ec;
  const fs::path exe = SelfExecutable(ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(exe.is_absolute());
  // The command name is the executable's file name, cut to 15 bytes.
  EXPECT_EQ(ProcessName(self), exe.filename().string().substr(0, 15));
  const std::vector<std::string> argv = SelfCommandLine();
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(fs::path(argv[0]).filename(), exe.filename());
}

TEST(PlatformProcess, AChildHasItsOwnStartTimeAndIsGoneOnceReaped) {
  TempDir dir;
  // Start times count clock ticks (10 ms): let this process's tick pass first.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t child = Spawn({"/bin/sleep", "30"}, dir.path() / "log");
  ASSERT_GT(child, 0);
  EXPECT_TRUE(ProcessAlive(child));
  EXPECT_EQ(PollChild(child, nullptr), ChildState::kRunning);
  const auto self_start = ProcessStartTime(CurrentPid());
  const auto child_start = ProcessStartTime(child);
  ASSERT_TRUE(child_start.has_value());
  EXPECT_NE(child_start, self_start) << "a fresh child started later than this process";
  // The name changes at exec, a moment after the fork.
  for (int i = 0; i < 500 && ProcessName(child) != "sleep"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ProcessName(child), "sleep");
  // Signalled only while it is the same process.
  EXPECT_FALSE(SignalIfSame(child, ProcessSignal::kKill, [] { return false; }));
  EXPECT_TRUE(ProcessAlive(child));
  EXPECT_TRUE(SignalIfSame(child, ProcessSignal::kKill, [] { return true; }));
  const ChildExit exit = WaitEnded(child);
  EXPECT_FALSE(exit.exited);
  EXPECT_EQ(exit.signal, SignalNumber(ProcessSignal::kKill));
  EXPECT_FALSE(ProcessAlive(child)) << "reaped: the pid names no process";
  EXPECT_FALSE(ProcessStartTime(child).has_value());
  EXPECT_EQ(PollChild(child, nullptr), ChildState::kUnknown);
}

TEST(PlatformProcess, DetachedChildWritesToItsLogAndReportsItsExit) {
  TempDir dir;
  const fs::path log = dir.path() / "child.log";
  const int64_t child =
      Spawn({"/bin/sh", "-c", "pwd; echo to-stderr >&2; exit 3"}, log, dir.path());
  const ChildExit exit = WaitEnded(child);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.status, 3);
  const std::string text = ReadAll(log);
  EXPECT_NE(text.find(fs::canonical(dir.path()).string()), std::string::npos) << text;
  EXPECT_NE(text.find("to-stderr"), std::string::npos) << text;

  const int64_t lost = Spawn({"/bin/sh", "-c", "exit 0"}, log, dir.path() / "missing");
  const ChildExit e2 = WaitEnded(lost);
  EXPECT_TRUE(e2.exited);
  EXPECT_EQ(e2.status, 126);
  EXPECT_NE(ReadAll(log).find("no cwd\n"), std::string::npos);

  const int64_t bad = Spawn({(dir.path() / "no-such-program").string()}, log);
  const ChildExit e3 = WaitEnded(bad);
  EXPECT_TRUE(e3.exited);
  EXPECT_EQ(e3.status, 127);
  EXPECT_NE(ReadAll(log).find("no exec\n"), std::string::npos);

  DetachedSpawn s;
  s.exe = "/bin/true";
  s.argv = {"true"};
  s.log = dir.path() / "missing" / "log";
  const SpawnResult r = SpawnDetached(s);
  EXPECT_EQ(r.failed, SpawnResult::kOpenLog);
  EXPECT_NE(r.error, 0);
}

TEST(PlatformProcess, SignalNumbersFollowTheShellConvention) {
  EXPECT_EQ(128 + SignalNumber(ProcessSignal::kInterrupt), 130);
  EXPECT_EQ(128 + SignalNumber(ProcessSignal::kTerminate), 143);
  EXPECT_EQ(SignalNumber(ProcessSignal::kKill), 9);
}

TEST(PlatformProcText, CpuInfoFlagsAndModel) {
  const std::string x86 =
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R45\n"
      "flags\t\t: fpu avx2 fma avx512f avx512_vnni\n\nprocessor\t: 1\nflags\t\t: fpu sse\n";
  EXPECT_EQ(linux_text::ParseCpuFlags(x86),
            (std::set<std::string>{"fpu", "avx2", "fma", "avx512f", "avx512_vnni"}))
      << "the first CPU's flags";
  EXPECT_EQ(linux_text::ParseCpuModelName(x86), "AMD EPYC 9R45");
  const std::string arm = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU part\t: 0xd40\n";
  EXPECT_EQ(linux_text::ParseCpuFlags(arm), (std::set<std::string>{"fp", "asimd", "sve"}));
  EXPECT_FALSE(linux_text::ParseCpuModelName(arm).has_value());
  EXPECT_TRUE(linux_text::ParseCpuFlags("").empty());
  EXPECT_EQ(linux_text::ParseCpuModelName("model name\t:\n"), "");
}

TEST(PlatformProcText, StatStartTimeSkipsTheCommandNameAndZombies) {
  // Field 22 is 987654; the command name holds spaces and parentheses.
  std::string fields;
  for (int i = 4; i <= 21; ++i) fields += " " + std::to_string(i);
  const std::string stat = "1234 (a) (b c)) S" + fields + " 987654 23 24\n";
  EXPECT_EQ(linux_text::ParseStatStartTime(stat), 987654u);
  const std::string zombie = "1234 (x) Z" + fields + " 987654 23\n";
  EXPECT_FALSE(linux_text::ParseStatStartTime(zombie).has_value());
  EXPECT_FALSE(linux_text::ParseStatStartTime("").has_value());
  EXPECT_FALSE(linux_text::ParseStatStartTime("1 (x) S 4 5").has_value());
}

TEST(PlatformProcText, CommandLineAndListeningSockets) {
  using V = std::vector<std::string>;
  static constexpr char kCmdline[] =
      "ebb\0serve\0--port\0"
      "8080\0";
  EXPECT_EQ(linux_text::SplitNulSeparated(std::string(kCmdline, sizeof(kCmdline) - 1)),
            (V{"ebb", "serve", "--port", "8080"}));
  EXPECT_EQ(linux_text::SplitNulSeparated(std::string("a\0b", 3)), (V{"a", "b"}));
  EXPECT_TRUE(linux_text::SplitNulSeparated("").empty());
  const std::string table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:2CAB 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 "
      "4242 1 0000\n"
      "   1: 0100007F:2CAB 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000 0 "
      "4343 1 0000\n"
      "   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 0 "
      "4444 1 0000\n";
  EXPECT_EQ(linux_text::ListeningInodes(table, 11435), (V{"4242"})) << "listening only";
  EXPECT_EQ(linux_text::ListeningInodes(table, 8080), (V{"4444"}));
  EXPECT_TRUE(linux_text::ListeningInodes(table, 9).empty());
}

TEST(PlatformSystemInfo, ThisMachine) {
  EXPECT_GT(PhysicalMemoryBytes(), 0u);
  EXPECT_GE(AllowedCpuCount(), 1);
  EXPECT_FALSE(OsDescription().empty());
  const auto status = ReadSelfMemoryStatus();
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(status->find("VmRSS:"), std::string::npos);
  const CpuTopology t = ReadCpuTopology();
  EXPECT_EQ(static_cast<int>(t.allowed_cpus.size()), AllowedCpuCount());
}

TEST(PlatformMemoryPressure, ReadsAFakeMachineTree) {
  TempDir dir;
  const fs::path proc = dir.path() / "proc";
  fs::create_directories(proc / "pressure");
  std::ofstream(proc / "pressure/memory") << "some avg10=12.50 avg60=1.00 avg300=0.00 total=5\n";
  std::ofstream(proc / "meminfo") << "MemTotal:  1000 kB\nMemAvailable:  250 kB\n";
  const PressureSource s = ResolvePressureSource("machine", proc, dir.path() / "sys");
  EXPECT_TRUE(s.cgroup.empty());
  const PressureSample x = ReadPressure(s);
  EXPECT_DOUBLE_EQ(x.psi_some_avg10, 12.5);
  EXPECT_EQ(x.limit_bytes, 1000u * 1024);
  EXPECT_EQ(x.usage_bytes, 750u * 1024);
  EXPECT_EQ(x.events_high, -1);
}

TEST(PlatformFile, AtomicWritesLocksAndWriteProbes) {
  TempDir dir;
  const fs::path target = dir.path() / "state.json";
  const fs::path temp = dir.path() / ".state.json.tmp";
  ASSERT_TRUE(WriteFileAtomically(target, temp, "one").ok());
  ASSERT_TRUE(WriteFileAtomically(target, temp, "two").ok());
  EXPECT_EQ(ReadAll(target), "two");
  EXPECT_FALSE(fs::exists(temp));
  const FileStepResult r =
      WriteFileAtomically(dir.path() / "missing" / "x", dir.path() / "missing" / "t", "x");
  EXPECT_FALSE(r.ok());
  EXPECT_STREQ(r.step, "open");

  // The temp file of a state file that holds a secret is owner-only.
  FileInfo info;
  ASSERT_EQ(WriteFileAtomically(target, temp, "three").error, 0);
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(StatPath(target, &info), 0);

  FileLock lock(dir.path() / "lock", FileLock::Wait::kYes, /*owner_only=*/true);
  EXPECT_TRUE(lock.held());
  EXPECT_EQ(fs::status(dir.path() / "lock").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  FileLock moved(std::move(lock));
  EXPECT_TRUE(moved.held());
  FileLock missing(dir.path() / "missing" / "lock", FileLock::Wait::kYes, true);
  EXPECT_FALSE(missing.held());
  EXPECT_TRUE(missing.open_failed());
  EXPECT_EQ(missing.err(), ENOENT);

  EXPECT_EQ(ProbeWrite(dir.path() / "probe", 4096), 0);
  EXPECT_FALSE(fs::exists(dir.path() / "probe"));
  EXPECT_NE(ProbeWrite(dir.path() / "missing" / "probe", 4096), 0);
  EXPECT_TRUE(CanWrite(dir.path()));
  EXPECT_FALSE(CanWrite(dir.path() / "missing"));
}

TEST(PlatformNet, ProbeListenAndAWakeEventInAPollSet) {
  const ListenProbe any = ProbeListen("127.0.0.1", 0);
  EXPECT_TRUE(any.ok) << any.error;
  WakeEvent wake;
  ASSERT_TRUE(wake.Open());
  PollSet set;
  set.AddWake(wake);
  EXPECT_EQ(set.Wait(0), 0);
  EXPECT_FALSE(set.Ready(0));
  wake.Signal();
  EXPECT_EQ(set.Wait(1000), 1);
  EXPECT_TRUE(set.Readable(0));
  EXPECT_FALSE(set.Failed(0));
  wake.Drain();
  EXPECT_EQ(set.Wait(0), 0);
  wake.Close();
  EXPECT_FALSE(wake.is_open());
  wake.Signal();  // closed: a no-op
}

TEST(PlatformDynlib, OpensALibraryAndFindsASymbol) {
  std::string why;
  void* lib = OpenLibrary("libc.so.6", &why);
  ASSERT_NE(lib, nullptr) << why;
  EXPECT_NE(LibrarySymbol(lib, "getpid"), nullptr);
  EXPECT_EQ(LibrarySymbol(lib, "ebb_no_such_symbol"), nullptr);
  EXPECT_FALSE(LibraryPath(lib).empty());
  CloseLibrary(lib);
  EXPECT_EQ(OpenLibrary("libebb-no-such-library.so", &why), nullptr);
  EXPECT_FALSE(why.empty());
}

// glibc's ptmalloc_init() marks its heap initialised before it sets up the main arena's bins. In a
// process whose malloc is replaced (ASan, a preloaded jemalloc) nothing touched glibc's heap
// before, so two threads making the first heap call at once could walk empty bins: serve's
// concurrent model loads crashed in malloc_trim (SEGV at 0x8, stop 46's CI). Each round is a
// fresh child process whose first heap calls race; under the sanitizer build, before the fix,
// about one round in ten crashed.
TEST(PlatformHeap, FirstCallsFromManyThreadsAtOnceAreSafe) {
  constexpr int kRounds = 40;
  constexpr int kThreads = 8;
  for (int round = 0; round < kRounds; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
      std::atomic<int> ready{0};
      std::vector<std::thread> threads;
      for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&ready, i] {
          ready.fetch_add(1);
          while (ready.load() < kThreads) {
          }
          if (i == 0) {
            (void)LimitHeapArenas(2);
          } else {
            ReturnFreeHeap();
          }
        });
      }
      for (auto& t : threads) t.join();
      ReturnFreeHeap();  // later calls still work
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "round " << round << ": the child died (status " << status << ")";
  }
}

}  // namespace
}  // namespace ebb::platform
