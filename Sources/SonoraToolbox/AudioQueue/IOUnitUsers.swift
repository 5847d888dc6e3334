import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// Who plays and who records through an I/O unit, so one duplex unit serves both — a
/// player (a queue on the unit, or a shared queue output) and a recorder (an input queue) on
/// one card in one clock, the playAndRecord case — as RemoteIO does with input and output
/// both enabled.
///
/// Each side is claimed by one owner. EnableIO follows the claims: playback is on while it
/// is claimed; capture is on while it is claimed, and a capture claim alone turns playback
/// off (a capture-only device needs no playback PCM). A claim or release that changes
/// EnableIO, or a capture claim (its format and callback are fixed at initialization),
/// re-initializes the unit; a running unit is stopped for that and started again, a gap of
/// one device start in the other side's audio. The unit runs while any owner has started
/// it, and the last claim's release stops and uninitializes it, as a single owner did.
///
/// Device events (`takeEvents`, a single-consumer queue) are fanned out: each owner's
/// watcher gets every event, whichever looked first.
final class IOUnitUsers: @unchecked Sendable {
    enum Side: CustomStringConvertible {
        case playback, capture
        var description: String { self == .playback ? "playback" : "capture" }
    }

    static let shared = IOUnitUsers()

    private struct Owner {
        weak var object: AnyObject?
        let id: ObjectIdentifier
        init(_ object: AnyObject) {
            self.object = object
            id = ObjectIdentifier(object)
        }
        var isAlive: Bool { object != nil }
    }

    private struct Entry {
        weak var unit: IOUnit?
        var playback: Owner?
        var capture: Owner?
        /// Owners that started the unit and have not stopped it.
        var running: [Owner] = []
        /// Events taken from the device that an owner's watcher has not seen yet.
        var pending: [ObjectIdentifier: [DeviceEvent]] = [:]

        /// The side's owner while it lives (a dead one's claim is free to take).
        func owner(of side: Side) -> Owner? {
            let owner = claimant(of: side)
            return owner?.isAlive == true ? owner : nil
        }

        /// The side's claim as made, its owner alive or not (one going away releases it in its deinit).
        func claimant(of side: Side) -> Owner? { side == .playback ? playback : capture }

        mutating func set(_ side: Side, _ owner: Owner?) {
            if side == .playback { playback = owner } else { capture = owner }
        }

        var owners: [Owner] { [owner(of: .playback), owner(of: .capture)].compactMap { $0 } }
    }

    /// Guards `entries`; held only for bookkeeping, never across a unit's start or stop.
    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// Serializes reconfigurations (claims and releases), which stop, re-initialize and
    /// start units, with the owners' starts and stops: two owners changing one unit at once
    /// would interleave those steps (a start between another's uninitialize and initialize
    /// fails). Taken after an owner's own lock, never before one.
    private let configuring = NSLock()

    /// Claims `side` of `unit` for `owner`: sets EnableIO, then `configure` (formats and
    /// callbacks) on the unit, uninitialized if EnableIO changed or `side` is capture, then
    /// initializes it; a unit that was running runs again. Another live owner of the side
    /// is an error (`queueInvalidDevice`, naming the unit and side).
    func claim(_ side: Side, of unit: IOUnit, by owner: AnyObject, configure: (IOUnit) throws(AudioError) -> Void) throws(AudioError) {
        configuring.lock()
        defer { configuring.unlock() }
        let key = ObjectIdentifier(unit)
        let others: Entry = try withEntries { () throws(AudioError) -> Entry in
            var entry = entries[key] ?? Entry(unit: unit)
            if let holder = entry.owner(of: side), holder.id != ObjectIdentifier(owner) {
                throw AudioError(.queueInvalidDevice, "\(unit.name) on '\(unit.deviceName)': its \(side) is used by another queue (\(String(describing: holder.object.map { type(of: $0) } ?? nil)))")
            }
            entry.unit = unit
            return entry
        }
        let wantsOutput = side == .playback || others.owner(of: .playback) != nil
        // A playback claim leaves capture as it is (the caller may use the input callback itself).
        let wantsInput = side == .capture || others.owner(of: .capture) != nil || unit.isInputEnabled
        let reinitializes = unit.isInitialized && (side == .capture || unit.isOutputEnabled != wantsOutput || unit.isInputEnabled != wantsInput)
        let wasRunning = unit.isRunning
        if reinitializes {
            unit.stop()
            unit.uninitialize()
        }
        do throws(AudioError) {
            if !unit.isInitialized {
                try unit.setIOEnabled(wantsOutput, scope: .output, element: IOUnit.outputElement)
                try unit.setIOEnabled(wantsInput, scope: .input, element: IOUnit.inputElement)
            }
            try configure(unit)
            if !unit.isInitialized { try unit.initialize() }
            if wasRunning && !unit.isRunning { try unit.start() }
        } catch {
            // The other side keeps what it had where it can: its own claim still stands.
            if reinitializes, !others.owners.isEmpty { restore(unit, others: others, wasRunning: wasRunning) }
            throw error
        }
        withEntries {
            var entry = entries[key] ?? others
            entry.set(side, Owner(owner))
            entry.pending[ObjectIdentifier(owner)] = entry.pending[ObjectIdentifier(owner)] ?? []
            entries[key] = entry
        }
    }

    /// Puts back the other side after a failed claim: EnableIO as its claims say, initialized, running if it was.
    private func restore(_ unit: IOUnit, others: Entry, wasRunning: Bool) {
        guard !unit.isInitialized else { return }
        try? unit.setIOEnabled(others.owner(of: .playback) != nil, scope: .output, element: IOUnit.outputElement)
        try? unit.setIOEnabled(others.owner(of: .capture) != nil, scope: .input, element: IOUnit.inputElement)
        guard (try? unit.initialize()) != nil else { return }
        if wasRunning { try? unit.start() }
    }

    /// Releases `owner`'s claim of `side`. The last claim's release stops and uninitializes
    /// the unit; otherwise the side is turned off (`unconfigure` clears its callback) and the
    /// unit re-initialized, running again if it was. Not an owner's claim: as a single owner
    /// did, the unit is stopped and uninitialized.
    func release(_ side: Side, of unit: IOUnit, by owner: AnyObject, unconfigure: (IOUnit) throws(AudioError) -> Void) {
        configuring.lock()
        defer { configuring.unlock() }
        let key = ObjectIdentifier(unit)
        let me = ObjectIdentifier(owner)
        enum Outcome { case lastUser, notAClaimant, others(Entry) }
        let outcome: Outcome = withEntries {
            guard var entry = entries[key] else { return .lastUser }
            guard entry.claimant(of: side)?.id == me else {
                entry.running.removeAll { $0.id == me }
                entries[key] = entry
                return .notAClaimant
            }
            entry.set(side, nil)
            entry.running.removeAll { $0.id == me || !$0.isAlive }
            entry.pending[me] = nil
            if entry.owners.isEmpty {
                entries[key] = nil
                return .lastUser
            }
            entries[key] = entry
            return .others(entry)
        }
        switch outcome {
        case .notAClaimant:
            return
        case .lastUser:
            unit.stop()
            unit.uninitialize()
            try? unconfigure(unit)
        case .others(let remaining):
            let wasRunning = unit.isRunning
            unit.stop()
            unit.uninitialize()
            try? unconfigure(unit)
            restore(unit, others: remaining, wasRunning: wasRunning && !remaining.running.isEmpty)
        }
    }

    /// Starts `unit` for `owner` if it is not running yet. Not while another owner's claim or
    /// release re-initializes the unit (an uninitialized unit cannot start).
    func start(_ unit: IOUnit, by owner: AnyObject) throws(AudioError) {
        configuring.lock()
        defer { configuring.unlock() }
        let key = ObjectIdentifier(unit)
        withEntries {
            guard var entry = entries[key] else { return }
            entry.running.removeAll { !$0.isAlive || $0.id == ObjectIdentifier(owner) }
            entry.running.append(Owner(owner))
            entries[key] = entry
        }
        do throws(AudioError) {
            if !unit.isRunning { try unit.start() }
        } catch {
            withEntries { entries[key]?.running.removeAll { $0.id == ObjectIdentifier(owner) } }
            throw error
        }
    }

    /// `owner` no longer needs `unit` running: it stops once no other owner does.
    func stop(_ unit: IOUnit, by owner: AnyObject) {
        configuring.lock()
        defer { configuring.unlock() }
        let othersRun = withEntries { () -> Bool in
            guard var entry = entries[ObjectIdentifier(unit)] else { return false }
            entry.running.removeAll { !$0.isAlive || $0.id == ObjectIdentifier(owner) }
            entries[ObjectIdentifier(unit)] = entry
            return !entry.running.isEmpty
        }
        if !othersRun { unit.stop() }
    }

    /// The unit's device events since `owner` last looked (each owner sees every event).
    func takeEvents(of unit: IOUnit, for owner: AnyObject) -> [DeviceEvent] {
        guard let device = unit.device else { return [] }
        return withEntries {
            let fresh = device.takeEvents()
            let key = ObjectIdentifier(unit)
            guard var entry = entries[key], entry.owners.count > 1 else { return fresh }
            let me = ObjectIdentifier(owner)
            let mine = (entry.pending[me] ?? []) + fresh
            for other in entry.owners where other.id != me { entry.pending[other.id, default: []].append(contentsOf: fresh) }
            entry.pending[me] = []
            entries[key] = entry
            return mine
        }
    }

    /// Whether `unit`'s `side` is claimed by a live owner (tests, diagnostics).
    func isClaimed(_ side: Side, of unit: IOUnit) -> Bool {
        withEntries { entries[ObjectIdentifier(unit)]?.owner(of: side) != nil }
    }

    private func withEntries<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
