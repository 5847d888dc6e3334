/// The LV2 URIs Sonora uses, as Swift constants: the C headers' URI macros
/// (`LV2_URID__map` …) are string-literal concatenations that do not import into Swift.
public enum LV2URI {
    static let lv2 = "http://lv2plug.in/ns/lv2core#"
    static let ext = "http://lv2plug.in/ns/ext/"

    // Core
    public static let audioPort = lv2 + "AudioPort"
    public static let controlPort = lv2 + "ControlPort"
    public static let cvPort = lv2 + "CVPort"
    public static let inputPort = lv2 + "InputPort"
    public static let outputPort = lv2 + "OutputPort"
    public static let connectionOptional = lv2 + "connectionOptional"
    public static let toggled = lv2 + "toggled"
    public static let integer = lv2 + "integer"
    public static let enumeration = lv2 + "enumeration"
    public static let sampleRate = lv2 + "sampleRate"
    public static let reportsLatency = lv2 + "reportsLatency"
    public static let latency = lv2 + "latency"
    public static let isSideChain = lv2 + "isSideChain"
    public static let designation = lv2 + "designation"
    public static let freeWheeling = lv2 + "freeWheeling"
    public static let enabled = lv2 + "enabled"
    public static let inPlaceBroken = lv2 + "inPlaceBroken"
    public static let isLive = lv2 + "isLive"
    public static let hardRTCapable = lv2 + "hardRTCapable"
    public static let control = lv2 + "control"

    // Atom
    public static let atomPort = ext + "atom#AtomPort"
    public static let atomSequence = ext + "atom#Sequence"
    public static let atomChunk = ext + "atom#Chunk"
    public static let atomSupports = ext + "atom#supports"
    public static let atomInt = ext + "atom#Int"
    public static let atomFloat = ext + "atom#Float"
    public static let atomDouble = ext + "atom#Double"
    public static let atomLong = ext + "atom#Long"
    public static let atomBool = ext + "atom#Bool"
    public static let atomString = ext + "atom#String"
    public static let atomPath = ext + "atom#Path"
    public static let atomURID = ext + "atom#URID"
    public static let atomObject = ext + "atom#Object"
    public static let midiEvent = ext + "midi#MidiEvent"
    public static let eventPort = ext + "event#EventPort"

    // Features
    public static let uridMap = ext + "urid#map"
    public static let uridUnmap = ext + "urid#unmap"
    public static let options = ext + "options#options"
    public static let optionsInterface = ext + "options#interface"
    public static let boundedBlockLength = ext + "buf-size#boundedBlockLength"
    public static let fixedBlockLength = ext + "buf-size#fixedBlockLength"
    public static let powerOf2BlockLength = ext + "buf-size#powerOf2BlockLength"
    public static let coarseBlockLength = ext + "buf-size#coarseBlockLength"
    public static let minBlockLength = ext + "buf-size#minBlockLength"
    public static let maxBlockLength = ext + "buf-size#maxBlockLength"
    public static let nominalBlockLength = ext + "buf-size#nominalBlockLength"
    public static let sequenceSize = ext + "buf-size#sequenceSize"
    public static let log = ext + "log#log"
    public static let logError = ext + "log#Error"
    public static let logWarning = ext + "log#Warning"
    public static let logNote = ext + "log#Note"
    public static let logTrace = ext + "log#Trace"
    public static let workerSchedule = ext + "worker#schedule"
    public static let workerInterface = ext + "worker#interface"
    public static let stateInterface = ext + "state#interface"
    public static let stateLoadDefaultState = ext + "state#loadDefaultState"
    public static let stateMakePath = ext + "state#makePath"
    public static let stateMapPath = ext + "state#mapPath"
    public static let stateFreePath = ext + "state#freePath"
    public static let stateThreadSafeRestore = ext + "state#threadSafeRestore"
    public static let paramSampleRate = ext + "parameters#sampleRate"

    // Time (transport)
    public static let timePosition = ext + "time#Position"
    public static let timeFrame = ext + "time#frame"
    public static let timeSpeed = ext + "time#speed"
    public static let timeBeatsPerMinute = ext + "time#beatsPerMinute"
    public static let timeBar = ext + "time#bar"
    public static let timeBarBeat = ext + "time#barBeat"
    public static let timeBeatsPerBar = ext + "time#beatsPerBar"
    public static let timeBeatUnit = ext + "time#beatUnit"
    public static let timeBeat = ext + "time#beat"

    // Port metadata
    public static let portGroup = ext + "port-groups#group"
    public static let mainInput = ext + "port-groups#mainInput"
    public static let mainOutput = ext + "port-groups#mainOutput"
    public static let sideChainOf = ext + "port-groups#sideChainOf"
    public static let logarithmic = ext + "port-props#logarithmic"
    public static let notOnGUI = ext + "port-props#notOnGUI"
    public static let expensive = ext + "port-props#expensive"
    public static let unit = "http://lv2plug.in/ns/extensions/units#unit"
    public static let minimumSize = ext + "resize-port#minimumSize"
    public static let presetClass = ext + "presets#Preset"
    public static let rdfsLabel = "http://www.w3.org/2000/01/rdf-schema#label"
    public static let rdfsComment = "http://www.w3.org/2000/01/rdf-schema#comment"
    public static let patchWritable = ext + "patch#writable"
    public static let patchReadable = ext + "patch#readable"
    public static let patchSet = ext + "patch#Set"
    public static let patchGet = ext + "patch#Get"
    public static let patchPut = ext + "patch#Put"
    public static let patchBody = ext + "patch#body"
    public static let patchProperty = ext + "patch#property"
    public static let patchValue = ext + "patch#value"
    public static let patchMessage = ext + "patch#Message"
    public static let rdfsRange = "http://www.w3.org/2000/01/rdf-schema#range"
    public static let minimum = lv2 + "minimum"
    public static let maximum = lv2 + "maximum"

    /// Channel designations in the order they become channels of a bus (pg:left before pg:right …).
    public static let channelOrder: [String] = [
        "left", "right", "center", "side", "lowFrequencyEffects", "centerLeft", "centerRight",
        "sideLeft", "sideRight", "rearLeft", "rearRight", "rearCenter",
    ].map { ext + "port-groups#" + $0 }

    /// The features Sonora's host provides to every plugin (see LV2Features.swift).
    public static let providedFeatures: Set<String> = [
        uridMap, uridUnmap, options, boundedBlockLength, log, workerSchedule, stateLoadDefaultState,
        stateMakePath, stateMapPath, stateFreePath, isLive, hardRTCapable, inPlaceBroken,
        "http://lv2plug.in/ns/ext/urid#unmap",
    ]
}
