/// alSourcef / alSourcei / alSource3f by OpenAL enum, for code ported from C and for the
/// reference comparisons: an enum that is not a source property of that shape is
/// `invalidEnum`, recorded on the context as every other error.
extension ALSource {
    /// OpenAL's source property enums.
    public enum Property {
        public static let coneInnerAngle: Int32 = 0x1001
        public static let coneOuterAngle: Int32 = 0x1002
        public static let pitch: Int32 = 0x1003
        public static let position: Int32 = 0x1004
        public static let direction: Int32 = 0x1005
        public static let velocity: Int32 = 0x1006
        public static let looping: Int32 = 0x1007
        public static let buffer: Int32 = 0x1009
        public static let gain: Int32 = 0x100A
        public static let minGain: Int32 = 0x100D
        public static let maxGain: Int32 = 0x100E
        public static let sourceState: Int32 = 0x1010
        public static let buffersQueued: Int32 = 0x1015
        public static let buffersProcessed: Int32 = 0x1016
        public static let referenceDistance: Int32 = 0x1020
        public static let rolloffFactor: Int32 = 0x1021
        public static let coneOuterGain: Int32 = 0x1022
        public static let maxDistance: Int32 = 0x1023
        public static let secOffset: Int32 = 0x1024
        public static let sampleOffset: Int32 = 0x1025
        public static let byteOffset: Int32 = 0x1026
        public static let sourceRelative: Int32 = 0x0202
    }

    /// alSourcef.
    public func set(_ property: Int32, _ value: Float) throws(ALError) {
        switch property {
        case Property.pitch: try setPitch(value)
        case Property.gain: try setGain(value)
        case Property.minGain: try setMinGain(value)
        case Property.maxGain: try setMaxGain(value)
        case Property.referenceDistance: try setReferenceDistance(value)
        case Property.rolloffFactor: try setRolloffFactor(value)
        case Property.maxDistance: try setMaxDistance(value)
        case Property.coneInnerAngle: try setConeInnerAngle(value)
        case Property.coneOuterAngle: try setConeOuterAngle(value)
        case Property.coneOuterGain: try setConeOuterGain(value)
        case Property.secOffset: try setSecondOffset(value)
        case Property.sampleOffset: try setSampleOffset(Int(value))
        case Property.byteOffset: try setByteOffset(Int(value))
        default: throw invalidEnum("alSourcef", property)
        }
    }

    /// alSourcei (looping, relative and the offsets; booleans are 0 or 1, else `invalidValue`).
    public func set(_ property: Int32, _ value: Int) throws(ALError) {
        switch property {
        case Property.looping, Property.sourceRelative:
            guard value == 0 || value == 1 else { throw invalidValue("alSourcei", property, value) }
            if property == Property.looping { try setLooping(value == 1) } else { try setRelative(value == 1) }
        case Property.sampleOffset: try setSampleOffset(value)
        case Property.byteOffset: try setByteOffset(value)
        case Property.secOffset: try setSecondOffset(Float(value))
        default: throw invalidEnum("alSourcei", property)
        }
    }

    /// alSource3f.
    public func set(_ property: Int32, _ value: SIMD3<Float>) throws(ALError) {
        switch property {
        case Property.position: try setPosition(value)
        case Property.velocity: try setVelocity(value)
        case Property.direction: try setDirection(value)
        default: throw invalidEnum("alSource3f", property)
        }
    }

    /// alGetSourcef.
    public func float(_ property: Int32) throws(ALError) -> Float {
        switch property {
        case Property.pitch: return pitch
        case Property.gain: return gain
        case Property.minGain: return minGain
        case Property.maxGain: return maxGain
        case Property.referenceDistance: return referenceDistance
        case Property.rolloffFactor: return rolloffFactor
        case Property.maxDistance: return maxDistance
        case Property.coneInnerAngle: return coneInnerAngle
        case Property.coneOuterAngle: return coneOuterAngle
        case Property.coneOuterGain: return coneOuterGain
        case Property.secOffset: return secondOffset
        case Property.sampleOffset: return Float(sampleOffset)
        case Property.byteOffset: return Float(byteOffset)
        default: throw invalidEnum("alGetSourcef", property)
        }
    }

    /// alGetSourcei.
    public func integer(_ property: Int32) throws(ALError) -> Int {
        switch property {
        case Property.looping: return isLooping ? 1 : 0
        case Property.sourceRelative: return isRelative ? 1 : 0
        case Property.sourceState: return Int(state.alValue)
        case Property.buffersQueued: return buffersQueued
        case Property.buffersProcessed: return buffersProcessed
        case Property.sampleOffset: return sampleOffset
        case Property.byteOffset: return byteOffset
        case Property.secOffset: return Int(secondOffset)
        default: throw invalidEnum("alGetSourcei", property)
        }
    }

    private func invalidEnum(_ call: String, _ property: Int32) -> ALError {
        context.device.locked { context.recordLocked(.invalidEnum, "\(call): 0x\(String(property, radix: 16)) is not a source property of this kind") }
    }

    private func invalidValue(_ call: String, _ property: Int32, _ value: Int) -> ALError {
        context.device.locked { context.recordLocked(.invalidValue, "\(call)(0x\(String(property, radix: 16))): \(value) is not AL_TRUE or AL_FALSE") }
    }
}
