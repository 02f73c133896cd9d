// MappedFileGuard: a mapped file truncated under the process is absorbed (zeros, a fault count)
// inside the guard's ranges, and every other SIGBUS still reaches the handler that was there
// before (SIG_DFL: the process dies of SIGBUS; a user handler: it is called).
#include "memory/mapped_file_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

// ASan installs its own SIGBUS handler by default (handle_sigbus=1), which reports and exits
// with code 1: the guard then chains to it, not to SIG_DFL, and the death tests below that expect
// death by SIGBUS would see exit code 1. Off for this binary, so that the sanitizer build checks
// the same chain to SIG_DFL; ASAN_OPTIONS in the environment still applies on top.
#if defined(__SANITIZE_ADDRESS__)
#define EBB_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EBB_TEST_ASAN 1
#endif
#endif
#ifdef EBB_TEST_ASAN
extern "C" const char* __asan_default_options() { return "handle_sigbus=0"; }
#endif

namespace ebb::internal {
namespace {

namespace fs = std::filesystem;

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A file of `pages` pages of non-zero bytes in a fresh temp folder, open read-write; removed at
// the end of the test.
class TempFile {
 public:
  explicit TempFile(size_t pages, const std::string& name = "model.onnx.data") {
    std::string tmpl = (fs::temp_directory_path() / "ebb_mfg_XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    path_ = dir_ / name;
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    std::vector<uint8_t> bytes(pages * kPage);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = Expected(i);
    if (fd_ < 0 || write(fd_, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      ADD_FAILURE() << "cannot write " << path_;
    size_ = bytes.size();
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  static uint8_t Expected(size_t i) { return static_cast<uint8_t>(i % 251 + 1); }  // never 0

  // PROT_READ; MAP_SHARED like a plain reader, MAP_PRIVATE like ORT's external data.
  const uint8_t* Map(int flags) {
    void* p = mmap(nullptr, size_, PROT_READ, flags, fd_, 0);
    EXPECT_NE(p, MAP_FAILED);
    return static_cast<const uint8_t*>(p);
  }
  void Truncate(size_t bytes) { ASSERT_EQ(ftruncate(fd_, static_cast<off_t>(bytes)), 0); }

  const fs::path& path() const { return path_; }
  const fs::path& dir() const { return dir_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  fs::path dir_, path_;
  int fd_ = -1;
  size_t size_ = 0;
};

// Every byte of the mapping, read through a volatile pointer so the reads happen.
std::vector<uint8_t> ReadAll(const uint8_t* p, size_t n) {
  std::vector<uint8_t> out(n);
  const volatile uint8_t* v = p;
  for (size_t i = 0; i < n; ++i) out[i] = v[i];
  return out;
}

// Bytes before `eof` are the file's, the rest zeros; the first mismatch otherwise.
::testing::AssertionResult FileThenZeros(const std::vector<uint8_t>& bytes, size_t eof) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const uint8_t want = i < eof ? TempFile::Expected(i) : 0;
    if (bytes[i] != want)
      return ::testing::AssertionFailure() << "byte " << i << " is " << int(bytes[i])
                                           << ", expected " << int(want) << " (eof " << eof << ")";
  }
  return ::testing::AssertionSuccess();
}

// In a death test's child: no core file, and a hang (a handler that returns to a fault that
// repeats) dies of SIGALRM instead, which fails the test instead of blocking it.
void PrepareToDie() {
  struct rlimit none {};
  setrlimit(RLIMIT_CORE, &none);
  alarm(20);
}

void ExpectTruncationAbsorbed(size_t new_size) {
  TempFile file(4);
  const uint8_t* shared = file.Map(MAP_SHARED);
  const uint8_t* priv = file.Map(MAP_PRIVATE);
  ASSERT_TRUE(FileThenZeros(ReadAll(priv, file.size()), file.size()));  // resident before

  auto guard = MappedFileGuard::Protect({file.path()});
  ASSERT_EQ(guard->num_ranges(), 2u);
  EXPECT_FALSE(guard->broken());
  EXPECT_EQ(guard->Describe(), "no mapped file faulted");

  file.Truncate(new_size);
  EXPECT_TRUE(FileThenZeros(ReadAll(shared, file.size()), new_size));
  EXPECT_TRUE(FileThenZeros(ReadAll(priv, file.size()), new_size));

  // One fault per mapping: the first page past the new end of file, after which the rest of
  // the range is zeros already.
  const size_t pages_per_mapping = (file.size() - (new_size + kPage - 1) / kPage * kPage) / kPage;
  EXPECT_EQ(guard->faults(), 2u);
  EXPECT_TRUE(guard->broken());
  EXPECT_EQ(guard->pages_zeroed(), 2 * pages_per_mapping);
  const std::string what = guard->Describe();
  EXPECT_NE(what.find(file.path().string() + " was truncated or changed while mapped (" +
                      std::to_string(2 * pages_per_mapping) + " pages replaced by zeros)"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("reload the model"), std::string::npos) << what;

  // Reads again: zeros, no new faults.
  EXPECT_TRUE(FileThenZeros(ReadAll(shared, file.size()), new_size));
  EXPECT_EQ(guard->faults(), 2u);
  guard.reset();
  munmap(const_cast<uint8_t*>(shared), file.size());
  munmap(const_cast<uint8_t*>(priv), file.size());
}

TEST(MappedFileGuard, TruncatedToHalfReadsZerosPastTheNewEndAndIsBroken) {
  ExpectTruncationAbsorbed(kPage * 3 / 2);  // mid-page: the kernel zeroes the tail of page 1
}

TEST(MappedFileGuard, TruncatedToZeroReadsZerosAndIsBroken) { ExpectTruncationAbsorbed(0); }

// ORT maps external data MAP_PRIVATE and PROT_READ | PROT_WRITE: the zero pages keep the
// protection, so a write to them after the fault works, and pages it copied on write before the
// end of file keep their bytes.
TEST(MappedFileGuard, AWritablePrivateMappingStaysWritable) {
  TempFile file(4);
  void* m = mmap(nullptr, file.size(), PROT_READ | PROT_WRITE, MAP_PRIVATE, file.fd(), 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* p = static_cast<uint8_t*>(m);
  p[0] = 0;  // copy on write of page 0
  auto guard = MappedFileGuard::Protect({file.path()});
  ASSERT_EQ(guard->num_ranges(), 1u);
  file.Truncate(kPage);
  std::vector<uint8_t> bytes = ReadAll(p, file.size());
  EXPECT_EQ(bytes[0], 0);
  bytes[0] = TempFile::Expected(0);
  EXPECT_TRUE(FileThenZeros(bytes, kPage));
  EXPECT_EQ(guard->faults(), 1u);
  EXPECT_EQ(guard->pages_zeroed(), 3u);
  p[2 * kPage] = 7;  // writable zeros
  EXPECT_EQ(p[2 * kPage], 7);
  guard.reset();
  munmap(m, file.size());
}

TEST(MappedFileGuard, AnUnprotectedMappingStillDiesOfSigbus) {
  TempFile protected_file(2), other(2, "other.data");
  const uint8_t* p = protected_file.Map(MAP_PRIVATE);
  const uint8_t* q = other.Map(MAP_PRIVATE);
  auto guard = MappedFileGuard::Protect({protected_file.path()});
  ASSERT_EQ(guard->num_ranges(), 1u);
  // The guard's handler is installed and chains to SIG_DFL: the default action still happens.
  EXPECT_EXIT(
      {
        PrepareToDie();
        other.Truncate(0);
        ReadAll(q, other.size());
      },
      ::testing::KilledBySignal(SIGBUS), "");
  EXPECT_EQ(guard->faults(), 0u);
  guard.reset();
  munmap(const_cast<uint8_t*>(p), protected_file.size());
  munmap(const_cast<uint8_t*>(q), other.size());
}

TEST(MappedFileGuard, ADestroyedGuardNoLongerAbsorbs) {
  TempFile file(2);
  const uint8_t* p = file.Map(MAP_PRIVATE);
  MappedFileGuard::Protect({file.path()}).reset();  // registered, then unregistered
  EXPECT_EXIT(
      {
        PrepareToDie();
        file.Truncate(0);
        ReadAll(p, file.size());
      },
      ::testing::KilledBySignal(SIGBUS), "");
  munmap(const_cast<uint8_t*>(p), file.size());
}

// The user handler's view of the unprotected mapping, and whether a fault is expected now.
uintptr_t g_other_start = 0, g_other_end = 0;
volatile sig_atomic_t g_user_fault_expected = 0;

void UserSiginfoHandler(int, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  _exit(addr >= g_other_start && addr < g_other_end ? 42 : 43);
}
void UserPlainHandler(int) { _exit(g_user_fault_expected ? 42 : 43); }

// Installs the user's handler, then a guard: a truncation inside the guard's range is absorbed
// without calling the user's handler (else exit 43 or 44), one outside reaches it (exit 42).
[[noreturn]] void UserHandlerScenario(bool siginfo) {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  if (siginfo) {
    sa.sa_sigaction = UserSiginfoHandler;
    sa.sa_flags = SA_SIGINFO;
  } else {
    sa.sa_handler = UserPlainHandler;
  }
  sigaction(SIGBUS, &sa, nullptr);
  PrepareToDie();
  TempFile file(2);
  TempFile other(2, "other.data");
  const uint8_t* p = file.Map(MAP_PRIVATE);
  const uint8_t* q = other.Map(MAP_PRIVATE);
  g_other_start = reinterpret_cast<uintptr_t>(q);
  g_other_end = g_other_start + other.size();
  auto guard = MappedFileGuard::Protect({file.path()});
  file.Truncate(kPage / 2);
  if (!FileThenZeros(ReadAll(p, file.size()), kPage / 2) || guard->faults() != 1) _exit(44);
  other.Truncate(0);
  g_user_fault_expected = 1;
  ReadAll(q, other.size());
  _exit(45);  // the fault did not reach the user's handler
}

// In a fresh process (threadsafe death tests re-execute the binary), so that the user's handler
// is installed before the guard's, as when a crash reporter was there first.
void ExpectChainsToUserHandler(bool siginfo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(UserHandlerScenario(siginfo), ::testing::ExitedWithCode(42), "");
}

TEST(MappedFileGuard, ChainsToAPreviousSiginfoHandler) { ExpectChainsToUserHandler(true); }
TEST(MappedFileGuard, ChainsToAPreviousPlainHandler) { ExpectChainsToUserHandler(false); }

TEST(MappedFileGuard, AFileThatIsNotMappedIsProtectedByNoRanges) {
  TempFile file(1);
  auto guard = MappedFileGuard::Protect({file.path(), file.dir() / "does-not-exist"});
  EXPECT_EQ(guard->num_ranges(), 0u);
  EXPECT_FALSE(guard->broken());
  EXPECT_EQ(guard->Describe(), "no mapped file faulted");
  EXPECT_EQ(MappedFileGuard::Protect({})->num_ranges(), 0u);
}

TEST(MappedFileGuard, RescanPicksUpALaterMappingAndDropsAnUnmappedOne) {
  TempFile file(3);
  auto guard = MappedFileGuard::Protect({file.path()});
  EXPECT_EQ(guard->num_ranges(), 0u);
  const uint8_t* p = file.Map(MAP_PRIVATE);
  guard->Rescan();
  EXPECT_EQ(guard->num_ranges(), 1u);
  guard->Rescan();  // nothing changed
  EXPECT_EQ(guard->num_ranges(), 1u);

  file.Truncate(kPage);
  EXPECT_TRUE(FileThenZeros(ReadAll(p, file.size()), kPage));
  EXPECT_EQ(guard->faults(), 1u);
  EXPECT_EQ(guard->pages_zeroed(), 2u);
  guard->Rescan();  // the file's mapping is now its first page; the zeros are anonymous
  EXPECT_EQ(guard->num_ranges(), 1u);
  EXPECT_EQ(guard->faults(), 1u);  // counts survive a rescan

  munmap(const_cast<uint8_t*>(p), file.size());
  guard->Rescan();
  EXPECT_EQ(guard->num_ranges(), 0u);
  EXPECT_TRUE(guard->broken());
}

TEST(MappedFileGuard, MatchesTheMappedInodeNotThePath) {
  // The path was replaced before Protect: the mapping is of the old file, not protected.
  TempFile file(2);
  const uint8_t* p = file.Map(MAP_PRIVATE);
  const fs::path replacement = file.dir() / "replacement";
  {
    TempFile fresh(1);
    fs::copy_file(fresh.path(), replacement);
  }
  fs::rename(replacement, file.path());
  EXPECT_EQ(MappedFileGuard::Protect({file.path()})->num_ranges(), 0u);
  munmap(const_cast<uint8_t*>(p), file.size());

  // Protected, then the path is unlinked ("(deleted)" in /proc/self/maps) and the file truncated
  // through a descriptor: still absorbed.
  TempFile victim(2);
  const uint8_t* v = victim.Map(MAP_PRIVATE);
  auto guard = MappedFileGuard::Protect({victim.path()});
  ASSERT_EQ(guard->num_ranges(), 1u);
  fs::remove(victim.path());
  guard->Rescan();
  EXPECT_EQ(guard->num_ranges(), 1u);
  victim.Truncate(0);
  EXPECT_TRUE(FileThenZeros(ReadAll(v, victim.size()), 0));
  EXPECT_EQ(guard->faults(), 1u);
  munmap(const_cast<uint8_t*>(v), victim.size());
}

TEST(MappedFileGuard, AFullTableProtectsWhatFits) {
  TempFile file(1);
  std::vector<const uint8_t*> maps;
  for (size_t i = 0; i < MappedFileGuard::kMaxRanges + 8; ++i)
    maps.push_back(file.Map(MAP_PRIVATE));
  auto guard = MappedFileGuard::Protect({file.path()});
  EXPECT_EQ(guard->num_ranges(), MappedFileGuard::kMaxRanges);  // and a warning in the log
  TempFile other(1, "other.data");
  const uint8_t* q = other.Map(MAP_PRIVATE);
  EXPECT_EQ(MappedFileGuard::Protect({other.path()})->num_ranges(), 0u);  // nothing left
  guard.reset();
  EXPECT_EQ(MappedFileGuard::Protect({other.path()})->num_ranges(), 1u);  // slots are free again
  for (const uint8_t* m : maps) munmap(const_cast<uint8_t*>(m), file.size());
  munmap(const_cast<uint8_t*>(q), other.size());
}

// Threads fault in their own guards' ranges at once while another thread registers and
// unregisters guards of other files: every fault is absorbed and counted by its own guard.
TEST(MappedFileGuard, ConcurrentFaultsAndRegistrations) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<TempFile>> files;
  std::vector<const uint8_t*> maps;
  std::vector<std::unique_ptr<MappedFileGuard>> guards;
  for (int i = 0; i < kThreads; ++i) {
    files.push_back(std::make_unique<TempFile>(8));
    maps.push_back(files.back()->Map(MAP_PRIVATE));
    guards.push_back(MappedFileGuard::Protect({files.back()->path()}));
    files.back()->Truncate(0);
  }
  TempFile churn(1, "churn.data");
  const uint8_t* c = churn.Map(MAP_PRIVATE);
  std::thread registrar([&] {
    for (int i = 0; i < 200; ++i) MappedFileGuard::Protect({churn.path()})->Rescan();
  });
  std::vector<std::thread> readers;
  std::vector<int> ok(kThreads, 0);
  for (int i = 0; i < kThreads; ++i)
    readers.emplace_back([&, i] { ok[i] = FileThenZeros(ReadAll(maps[i], files[i]->size()), 0); });
  for (auto& t : readers) t.join();
  registrar.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(ok[i]) << i;
    EXPECT_EQ(guards[i]->faults(), 1u) << i;
    EXPECT_EQ(guards[i]->pages_zeroed(), 8u) << i;
  }
  guards.clear();
  for (int i = 0; i < kThreads; ++i) munmap(const_cast<uint8_t*>(maps[i]), files[i]->size());
  munmap(const_cast<uint8_t*>(c), churn.size());
}

}  // namespace
}  // namespace ebb::internal
