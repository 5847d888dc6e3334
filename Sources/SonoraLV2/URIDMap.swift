import CLilv
import Glibc
import SonoraCore
import Synchronization

/// urid:map and urid:unmap for every plugin of a host.
///
/// Mapping a new URI takes a lock (plugins map at instantiation, from any thread);
/// looking up a URI that is already mapped, and unmapping, take no lock: entries are
/// published once into fixed-capacity tables and never move, so a plugin that maps or
/// unmaps inside `run()` stays realtime-safe. The tables hold `capacity` URIs; past
/// that, `map` returns 0 (LV2's "could not map").
public final class URIDMap: @unchecked Sendable {
    public let capacity: Int
    /// Open-addressing hash table of URIDs (0 = empty slot), 2 × capacity slots.
    private let slots: UnsafeMutablePointer<Atomic<UInt32>>
    private let slotCount: Int
    /// `strings[urid - 1]`: the URI's NUL-terminated copy, written before the URID is published.
    private let strings: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let hashes: UnsafeMutablePointer<UInt64>
    private let count = Atomic<Int>(0)
    private let insertLock = ControlLock(())

    /// The C structs handed to plugins; they point back at this object (unretained: the host outlives its plugins).
    let mapFeature: UnsafeMutablePointer<LV2_URID_Map>
    let unmapFeature: UnsafeMutablePointer<LV2_URID_Unmap>

    public init(capacity: Int = 8192) {
        self.capacity = capacity
        slotCount = capacity * 2
        slots = .allocate(capacity: slotCount)
        for index in 0..<slotCount { (slots + index).initialize(to: Atomic(0)) }
        strings = .allocate(capacity: capacity)
        strings.initialize(repeating: nil, count: capacity)
        hashes = .allocate(capacity: capacity)
        hashes.initialize(repeating: 0, count: capacity)
        mapFeature = .allocate(capacity: 1)
        unmapFeature = .allocate(capacity: 1)
        let handle = Unmanaged.passUnretained(self).toOpaque()
        mapFeature.initialize(to: LV2_URID_Map(handle: handle, map: { handle, uri in
            guard let handle, let uri else { return 0 }
            return Unmanaged<URIDMap>.fromOpaque(handle)._withUnsafeGuaranteedRef { $0.map(uri) }
        }))
        unmapFeature.initialize(to: LV2_URID_Unmap(handle: handle, unmap: { handle, urid in
            guard let handle else { return nil }
            return Unmanaged<URIDMap>.fromOpaque(handle)._withUnsafeGuaranteedRef { UnsafePointer($0.unmap(urid)) }
        }))
    }

    deinit {
        for index in 0..<count.load(ordering: .acquiring) { free(strings[index]) }
        strings.deallocate()
        hashes.deallocate()
        slots.deallocate()
        mapFeature.deallocate()
        unmapFeature.deallocate()
    }

    /// FNV-1a over the URI's bytes.
    private static func hash(_ uri: UnsafePointer<CChar>) -> (hash: UInt64, length: Int) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var length = 0
        while uri[length] != 0 {
            hash = (hash ^ UInt64(UInt8(bitPattern: uri[length]))) &* 0x100_0000_01b3
            length += 1
        }
        return (hash, length)
    }

    /// Finds `uri` without locking: the slot where it is, or the empty slot where it would go.
    private func probe(_ uri: UnsafePointer<CChar>, hash: UInt64) -> (urid: UInt32, slot: Int) {
        var slot = Int(hash % UInt64(slotCount))
        while true {
            let urid = slots[slot].load(ordering: .acquiring)
            if urid == 0 { return (0, slot) }
            if hashes[Int(urid) - 1] == hash, strcmp(strings[Int(urid) - 1]!, uri) == 0 { return (urid, slot) }
            slot = (slot + 1) % slotCount
        }
    }

    /// The URID of `uri`, mapping it if new (0 when the table is full).
    public func map(_ uri: UnsafePointer<CChar>) -> LV2_URID {
        let (hash, _) = Self.hash(uri)
        let found = probe(uri, hash: hash)
        if found.urid != 0 { return found.urid }
        return insertLock.withLock { _ -> LV2_URID in
            // Another thread may have inserted it since the lock-free probe.
            let again = probe(uri, hash: hash)
            if again.urid != 0 { return again.urid }
            let index = count.load(ordering: .relaxed)
            guard index < capacity, let copy = strdup(uri) else { return 0 }
            strings[index] = copy
            hashes[index] = hash
            let urid = UInt32(index + 1)
            count.store(index + 1, ordering: .releasing)
            slots[again.slot].store(urid, ordering: .releasing)
            return urid
        }
    }

    public func map(_ uri: String) -> LV2_URID {
        uri.withCString { map($0) }
    }

    /// The URI of `urid`, or nil if it was never mapped. Lock-free.
    public func unmap(_ urid: LV2_URID) -> UnsafeMutablePointer<CChar>? {
        let index = Int(urid) - 1
        guard index >= 0, index < count.load(ordering: .acquiring) else { return nil }
        return strings[index]
    }

    public func uri(of urid: LV2_URID) -> String? {
        unmap(urid).map { String(cString: $0) }
    }

    /// Number of URIs mapped so far.
    public var mappedCount: Int { count.load(ordering: .acquiring) }
}
