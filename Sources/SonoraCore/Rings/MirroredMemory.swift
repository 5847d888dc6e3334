#if canImport(Glibc)
import Glibc
#endif
import CSonoraSystem

/// `size` bytes of shared memory mapped twice, back to back, so that
/// `base[size + i]` is `base[i]`: a ring over it never needs to split a region.
final class MirroredMemory {
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    let base: UnsafeMutableRawPointer
    let size: Int

    init(size: Int) throws(AudioError) {
        guard size > 0, size % Self.pageSize == 0 else {
            throw AudioError(.parameterError, "mirrored memory size \(size) is not a multiple of the page size \(Self.pageSize)")
        }
        let fd = sonora_memfd_create("sonora-ring")
        guard fd >= 0 else { throw Self.failure("memfd_create") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else { throw Self.failure("ftruncate") }
        // Reserve twice the size, then map the same pages over both halves.
        guard let reserved = mmap(nil, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            reserved != MAP_FAILED
        else { throw Self.failure("mmap (reserve)") }
        for half in 0..<2 {
            let address = reserved + half * size
            let mapped = mmap(address, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0)
            guard mapped == address else {
                munmap(reserved, 2 * size)
                throw Self.failure("mmap (half \(half + 1))")
            }
        }
        base = reserved
        self.size = size
    }

    deinit { munmap(base, 2 * size) }

    private static func failure(_ call: String) -> AudioError {
        AudioError(.memoryFull, "mirrored ring memory: \(call) failed: \(String(cString: strerror(sonora_errno())))")
    }
}
