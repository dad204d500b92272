// Mutex, MutexLock, UniqueLock: std::mutex with clang's thread-safety annotations, and the
// macros to say what a mutex guards (GAVEL_GUARDED_BY) and which functions need it held
// (GAVEL_REQUIRES). Under clang with -Wthread-safety (the `debug` preset) the compiler checks
// every access; under gcc the macros expand to nothing.
//
// Condition variables wait on UniqueLock::native() (a std::unique_lock<std::mutex>); write
// the wait as a loop (`while (!ready_) cv_.wait(lock.native());`) so the analysis sees the
// guarded reads under the lock (a predicate lambda is analysed as a separate function).
// Thread-safety: a Mutex is a mutex.
#pragma once

#include <mutex>

#if defined(__clang__)
#define GAVEL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GAVEL_THREAD_ANNOTATION(x)
#endif

#define GAVEL_CAPABILITY(name) GAVEL_THREAD_ANNOTATION(capability(name))
#define GAVEL_SCOPED_CAPABILITY GAVEL_THREAD_ANNOTATION(scoped_lockable)
#define GAVEL_GUARDED_BY(mu) GAVEL_THREAD_ANNOTATION(guarded_by(mu))
#define GAVEL_PT_GUARDED_BY(mu) GAVEL_THREAD_ANNOTATION(pt_guarded_by(mu))
#define GAVEL_REQUIRES(...) GAVEL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define GAVEL_EXCLUDES(...) GAVEL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define GAVEL_ACQUIRE(...) GAVEL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define GAVEL_RELEASE(...) GAVEL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define GAVEL_TRY_ACQUIRE(...) GAVEL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define GAVEL_RETURN_CAPABILITY(x) GAVEL_THREAD_ANNOTATION(lock_returned(x))
#define GAVEL_NO_THREAD_SAFETY_ANALYSIS GAVEL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace gavel {

class GAVEL_CAPABILITY("mutex") Mutex {
 public:
  void lock() GAVEL_ACQUIRE() { mutex_.lock(); }
  void unlock() GAVEL_RELEASE() { mutex_.unlock(); }
  bool try_lock() GAVEL_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // For std::unique_lock (condition variables); prefer MutexLock / UniqueLock.
  std::mutex& native() GAVEL_RETURN_CAPABILITY(this) { return mutex_; }

 private:
  std::mutex mutex_;
};

// Holds the mutex for its scope.
class GAVEL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) GAVEL_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() GAVEL_RELEASE() { mutex_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

// Holds the mutex for its scope and lends a std::unique_lock to condition variables, which
// release and retake it while they wait (the analysis treats the mutex as held throughout).
class GAVEL_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mutex) GAVEL_ACQUIRE(mutex) : lock_(mutex.native()) {}
  ~UniqueLock() GAVEL_RELEASE() {}
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;
  std::unique_lock<std::mutex>& native() { return lock_; }
  // Lets go for a while (e.g. around a slow call), then takes it back.
  void Unlock() GAVEL_RELEASE() { lock_.unlock(); }
  void Lock() GAVEL_ACQUIRE() { lock_.lock(); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace gavel
