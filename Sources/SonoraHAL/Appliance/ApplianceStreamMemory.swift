import CSonoraSystem
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One stream's shared memory mapped into this process: created (and sealed) by the
/// server, or mapped by the client from the descriptor it received. Unmapped when
/// released — on a control thread, never the realtime one.
final class ApplianceStreamMemory: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let byteCount: Int
    let channels: Int
    let capacity: Int
    /// The memfd, while this side still holds it (the server passes it on, then closes it).
    private(set) var descriptor: Int32

    private init(base: UnsafeMutableRawPointer, byteCount: Int, channels: Int, capacity: Int, descriptor: Int32) {
        self.base = base
        self.byteCount = byteCount
        self.channels = channels
        self.capacity = capacity
        self.descriptor = descriptor
    }

    deinit {
        munmap(base, byteCount)
        closeDescriptor()
    }

    func closeDescriptor() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    var ring: ApplianceRing { ApplianceRing(base: base, channels: channels, capacity: capacity) }

    /// Server side: a new memfd of the layout's size, sealed against shrink, grow and
    /// further seals, mapped, its header written and both positions zero.
    static func create(channels: Int, capacity: Int, sampleRate: Int, periodFrames: Int) throws(AudioError) -> ApplianceStreamMemory {
        let size = ApplianceStreamLayout.byteCount(channels: channels, capacity: capacity)
        let fd = sonora_memfd_create_sealed("sonora-stream", size)
        guard fd >= 0 else { throw AudioError(.memoryFull, "cannot create a stream's shared memory (\(size) bytes): \(ApplianceSocket.errorText(sonora_errno()))") }
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            let code = errno
            close(fd)
            throw AudioError(.memoryFull, "cannot map a stream's shared memory: \(ApplianceSocket.errorText(code))")
        }
        let header = mapped.assumingMemoryBound(to: UInt32.self)
        header[0] = ApplianceStreamLayout.magic
        header[1] = ApplianceStreamLayout.version
        header[2] = UInt32(channels)
        header[3] = UInt32(capacity)
        header[4] = UInt32(sampleRate)
        header[5] = UInt32(periodFrames)
        let memory = ApplianceStreamMemory(base: mapped, byteCount: size, channels: channels, capacity: capacity, descriptor: fd)
        memory.ring.writePosition.initialize(to: Atomic(0))
        memory.ring.readPosition.initialize(to: Atomic(0))
        return memory
    }

    /// Client side: maps `fd` (taking it over) after checking that it is sealed, large
    /// enough and carries the header the reply announced.
    static func map(_ fd: Int32, channels: Int, capacity: Int) throws(AudioError) -> ApplianceStreamMemory {
        var info = stat()
        let size = ApplianceStreamLayout.byteCount(channels: channels, capacity: capacity)
        guard fstat(fd, &info) == 0, Int(info.st_size) >= size else {
            close(fd)
            throw AudioError(.badStream, "the appliance's stream memory is smaller than \(channels) channels × \(capacity) frames")
        }
        guard sonora_memfd_seals_complete(sonora_memfd_seals(fd)) != 0 else {
            close(fd)
            throw AudioError(.badStream, "the appliance's stream memory is not sealed against resizing")
        }
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            let code = errno
            close(fd)
            throw AudioError(.memoryFull, "cannot map the appliance's stream memory: \(ApplianceSocket.errorText(code))")
        }
        close(fd)
        let header = mapped.assumingMemoryBound(to: UInt32.self)
        guard header[0] == ApplianceStreamLayout.magic, header[1] == ApplianceStreamLayout.version,
              header[2] == UInt32(channels), header[3] == UInt32(capacity)
        else {
            munmap(mapped, size)
            throw AudioError(.badStream, "the appliance's stream memory has an unexpected header")
        }
        return ApplianceStreamMemory(base: mapped, byteCount: size, channels: channels, capacity: capacity, descriptor: -1)
    }
}
