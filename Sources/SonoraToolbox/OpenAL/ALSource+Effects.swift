/// EFX on a source (ALC_EXT_EFX): the direct filter, the auxiliary sends, the room rolloff.
extension ALSource {
    /// AL_DIRECT_FILTER (default `.null`).
    public var directFilter: ALFilter {
        get { read(\.directFilter) }
        set { try? setDirectFilter(newValue) }
    }

    public func setDirectFilter(_ filter: ALFilter) throws(ALError) { try set("directFilter", true) { $0.directFilter = filter } }

    /// AL_ROOM_ROLLOFF_FACTOR, 0…10 (default 0).
    public var roomRolloffFactor: Float {
        get { read(\.roomRolloffFactor) }
        set { try? setRoomRolloffFactor(newValue) }
    }

    public func setRoomRolloffFactor(_ value: Float) throws(ALError) {
        try set("roomRolloffFactor", (0...10).contains(value)) { $0.roomRolloffFactor = value }
    }

    /// AL_AUXILIARY_SEND_FILTER_GAIN_AUTO (default true).
    public var auxiliarySendFilterGainAuto: Bool {
        get { read(\.auxiliarySendFilterGainAuto) }
        set { try? set("auxiliarySendFilterGainAuto", true) { $0.auxiliarySendFilterGainAuto = newValue } }
    }

    /// AL_AUXILIARY_SEND_FILTER: send `index` (0 ..< the context's `maxAuxiliarySends`) feeds
    /// `slot` (nil: nothing) through `filter`. `invalidValue` for an index out of range;
    /// `invalidName` for a deleted slot or one of another context.
    public func setAuxiliarySend(_ index: Int, slot: ALAuxiliaryEffectSlot?, filter: ALFilter = .null) throws(ALError) {
        try context.device.locked { () throws(ALError) in
            try checkLocked("setAuxiliarySend")
            guard index >= 0, index < sends.count else {
                throw context.recordLocked(.invalidValue, "ALSource.setAuxiliarySend(\(index)): the context has \(sends.count) sends")
            }
            if let slot, slot.isDeleted || slot.context !== context {
                throw context.recordLocked(.invalidName, "ALSource.setAuxiliarySend: the slot is deleted or of another context")
            }
            sends[index] = ALAuxiliarySend(slot: slot, filter: filter)
            context.sourceChangedLocked(self)
        }
    }

    /// The slot and filter of send `index` (nil slot: unused).
    public func auxiliarySend(_ index: Int) -> (slot: ALAuxiliaryEffectSlot?, filter: ALFilter)? {
        context.device.locked { index >= 0 && index < sends.count ? (sends[index].slot, sends[index].filter) : nil }
    }
}
