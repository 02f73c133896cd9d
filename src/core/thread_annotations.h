// Clang's thread-safety annotations (-Wthread-safety; `make thread-safety`) and the annotated
// mutex they need. libstdc++'s std::mutex carries no annotations, so a member guarded by one
// cannot be checked; ebb::Mutex is a std::mutex that can. The macros expand to nothing on other
// compilers (GCC builds see plain members and a plain mutex).
//
// Use: `Mutex mu_; int n_ EBB_GUARDED_BY(mu_);`, lock with `MutexLock lock(mu_);`, mark helpers
// that expect the lock held `EBB_REQUIRES(mu_)` and public methods that take it
// `EBB_EXCLUDES(mu_)`. Wait on a std::condition_variable_any with the Mutex itself, in a loop the
// analysis can see: `while (!ready_) cv_.wait(mu_);` (a predicate lambda is analysed on its own
// and does not know the lock is held).
#pragma once

#include <mutex>

#if defined(__clang__)
#define EBB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define EBB_THREAD_ANNOTATION(x)
#endif

#define EBB_CAPABILITY(x) EBB_THREAD_ANNOTATION(capability(x))
#define EBB_SCOPED_CAPABILITY EBB_THREAD_ANNOTATION(scoped_lockable)
#define EBB_GUARDED_BY(x) EBB_THREAD_ANNOTATION(guarded_by(x))
#define EBB_PT_GUARDED_BY(x) EBB_THREAD_ANNOTATION(pt_guarded_by(x))
#define EBB_REQUIRES(...) EBB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EBB_EXCLUDES(...) EBB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define EBB_ACQUIRE(...) EBB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define EBB_RELEASE(...) EBB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EBB_TRY_ACQUIRE(...) EBB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EBB_ASSERT_CAPABILITY(x) EBB_THREAD_ANNOTATION(assert_capability(x))
#define EBB_RETURN_CAPABILITY(x) EBB_THREAD_ANNOTATION(lock_returned(x))
#define EBB_NO_THREAD_SAFETY_ANALYSIS EBB_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace ebb {

// A std::mutex the analysis knows. BasicLockable (lock/unlock), so std::condition_variable_any
// waits on it directly. Not recursive; non-copyable.
class EBB_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() EBB_ACQUIRE() { mu_.lock(); }
  void unlock() EBB_RELEASE() { mu_.unlock(); }
  bool try_lock() EBB_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis that the caller holds it (nothing is checked at run time): for code the
  // analysis cannot follow, such as a callback run under the lock.
  void AssertHeld() const EBB_ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard's role). Unlock/Lock release and take it again
// inside the scope (std::unique_lock's role); the destructor unlocks only when it holds it.
// Prefer MutexUnlock for a call that must run without the lock: it relocks on a throw too.
class EBB_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) EBB_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() EBB_RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void Unlock() EBB_RELEASE() {
    held_ = false;
    mu_.unlock();
  }
  bool held() const { return held_; }
  void Lock() EBB_ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// Releases a Mutex the caller holds for its scope and takes it again at the end, also when the
// scope is left by an exception: for a call that must run without the lock (a load, a callback)
// inside a function that holds it, e.g. one marked EBB_REQUIRES(mu_).
class EBB_SCOPED_CAPABILITY MutexUnlock {
 public:
  explicit MutexUnlock(Mutex& mu) EBB_RELEASE(mu) : mu_(mu) { mu_.unlock(); }
  // RELEASE, not ACQUIRE: it ends the scoped capability (clang's documented form).
  ~MutexUnlock() EBB_RELEASE() { mu_.lock(); }
  MutexUnlock(const MutexUnlock&) = delete;
  MutexUnlock& operator=(const MutexUnlock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace ebb
