import CSndfile
import Synchronization

/// `sf_open` with the reason it failed. libsndfile keeps an open's error in one
/// process-wide variable that every later open resets (`sf_errno = 0` in
/// `psf_open_file`), so `sf_strerror(NULL)` read after a failed open can describe another
/// thread's successful one ("No Error."). Opens made through here, and the read of their
/// error, happen one at a time.
public enum SndfileOpening {
    private static let lock = Mutex(())

    /// The opened handle, or libsndfile's reason for refusing `path`.
    public static func open(_ path: String, mode: Int32, info: inout SF_INFO) -> Result<OpaquePointer, SndfileOpenFailure> {
        lock.withLock { _ in
            if let handle = sf_open(path, mode, &info) { return .success(handle) }
            return .failure(SndfileOpenFailure(reason: String(cString: sf_strerror(nil))))
        }
    }
}

/// libsndfile's reason an open failed, as `sf_strerror` gives it.
public struct SndfileOpenFailure: Error {
    public let reason: String
}

extension Result where Failure == SndfileOpenFailure {
    /// The failure's reason; empty for a success.
    var failureReason: String {
        if case .failure(let failure) = self { return failure.reason }
        return ""
    }
}
