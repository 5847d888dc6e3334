import CLilv
import Foundation
import SonoraCore

/// The feature array one instance is created with, and the memory behind it
/// (options values, path callbacks, log, worker). Lives as long as the instance.
final class LV2HostFeatures: @unchecked Sendable {
    let log: LV2Log
    let worker: LV2Worker
    /// Where state:makePath puts files the plugin creates; mapPath makes paths inside it relative.
    let scratchDirectory: String
    private let options: UnsafeMutablePointer<LV2_Options_Option>
    private let optionValues: UnsafeMutablePointer<Int32>
    private let sampleRateValue: UnsafeMutablePointer<Float>
    private let makePath: UnsafeMutablePointer<LV2_State_Make_Path>
    private let mapPath: UnsafeMutablePointer<LV2_State_Map_Path>
    private let freePath: UnsafeMutablePointer<LV2_State_Free_Path>
    private var features: [UnsafeMutablePointer<LV2_Feature>] = []
    private var uriStrings: [UnsafeMutablePointer<CChar>] = []
    /// NULL-terminated `const LV2_Feature* const*` for lilv_plugin_instantiate.
    let array: UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>

    init(
        pluginName: String, urids: URIDMap, sampleRate: Double, maximumBlockLength: Int, sequenceSize: Int,
        workerMode: LV2Worker.Mode, extraFeatures: Set<String> = []
    ) throws(AudioError) {
        do {
            log = try LV2Log(pluginName: pluginName, urids: urids)
        } catch {
            throw AudioError(.memoryFull, "\(pluginName): cannot allocate the log ring")
        }
        worker = try LV2Worker(mode: workerMode)
        scratchDirectory = NSTemporaryDirectory() + "sonora-lv2-\(getpid())-\(UUID().uuidString.prefix(8))"

        // options:options — the block lengths and sample rate, which some plugins (zam, dragonfly) need to instantiate.
        optionValues = .allocate(capacity: 4)
        optionValues[0] = 1  // minBlockLength: any block size from 1 up
        optionValues[1] = Int32(maximumBlockLength)
        optionValues[2] = Int32(min(maximumBlockLength, 512))  // nominalBlockLength
        optionValues[3] = Int32(sequenceSize)
        sampleRateValue = .allocate(capacity: 1)
        sampleRateValue.initialize(to: Float(sampleRate))
        let intType = urids.map(LV2URI.atomInt)
        let floatType = urids.map(LV2URI.atomFloat)
        func option(_ key: String, _ value: UnsafeRawPointer, size: Int, type: UInt32) -> LV2_Options_Option {
            LV2_Options_Option(
                context: LV2_OPTIONS_INSTANCE, subject: 0, key: urids.map(key), size: UInt32(size), type: type,
                value: value)
        }
        options = .allocate(capacity: 6)
        options[0] = option(LV2URI.minBlockLength, optionValues, size: 4, type: intType)
        options[1] = option(LV2URI.maxBlockLength, optionValues + 1, size: 4, type: intType)
        options[2] = option(LV2URI.nominalBlockLength, optionValues + 2, size: 4, type: intType)
        options[3] = option(LV2URI.sequenceSize, optionValues + 3, size: 4, type: intType)
        options[4] = option(LV2URI.paramSampleRate, sampleRateValue, size: 4, type: floatType)
        options[5] = LV2_Options_Option(context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil)

        makePath = .allocate(capacity: 1)
        mapPath = .allocate(capacity: 1)
        freePath = .allocate(capacity: 1)
        array = .allocate(capacity: 16)
        let context = Unmanaged.passUnretained(self).toOpaque()
        makePath.initialize(to: LV2_State_Make_Path(handle: context, path: { handle, path in
            guard let handle, let path else { return nil }
            let host = Unmanaged<LV2HostFeatures>.fromOpaque(handle).takeUnretainedValue()
            let full = host.scratchDirectory + "/" + String(cString: path)
            try? FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            return strdup(full)
        }))
        mapPath.initialize(to: LV2_State_Map_Path(handle: context, abstract_path: { handle, absolute in
            guard let handle, let absolute else { return nil }
            let host = Unmanaged<LV2HostFeatures>.fromOpaque(handle).takeUnretainedValue()
            let path = String(cString: absolute)
            let prefix = host.scratchDirectory + "/"
            return strdup(path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path)
        }, absolute_path: { handle, abstract in
            guard let handle, let abstract else { return nil }
            let host = Unmanaged<LV2HostFeatures>.fromOpaque(handle).takeUnretainedValue()
            let path = String(cString: abstract)
            return strdup(path.hasPrefix("/") ? path : host.scratchDirectory + "/" + path)
        }))
        freePath.initialize(to: LV2_State_Free_Path(handle: context, free_path: { _, path in free(path) }))

        add(LV2URI.uridMap, urids.mapFeature)
        add(LV2URI.uridUnmap, urids.unmapFeature)
        add(LV2URI.options, options)
        add(LV2URI.boundedBlockLength, nil)
        add(LV2URI.log, log.feature)
        add(LV2URI.workerSchedule, worker.feature)
        add(LV2URI.stateLoadDefaultState, nil)
        add(LV2URI.stateMakePath, makePath)
        add(LV2URI.stateMapPath, mapPath)
        add(LV2URI.stateFreePath, freePath)
        for uri in extraFeatures.sorted() { add(uri, nil as UnsafeMutableRawPointer?) }
        for (index, feature) in features.enumerated() { array[index] = UnsafePointer(feature) }
        array[features.count] = nil
    }

    private func add(_ uri: String, _ data: UnsafeMutableRawPointer?) {
        let text = strdup(uri)!
        uriStrings.append(text)
        let feature = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
        feature.initialize(to: LV2_Feature(URI: UnsafePointer(text), data: data))
        features.append(feature)
    }

    private func add<T>(_ uri: String, _ data: UnsafeMutablePointer<T>?) {
        add(uri, data.map { UnsafeMutableRawPointer($0) })
    }

    deinit {
        worker.stop()
        for feature in features { feature.deallocate() }
        for text in uriStrings { free(text) }
        array.deallocate()
        options.deallocate()
        optionValues.deallocate()
        sampleRateValue.deallocate()
        makePath.deallocate()
        mapPath.deallocate()
        freePath.deallocate()
        try? FileManager.default.removeItem(atPath: scratchDirectory)
    }
}
