import Dispatch

/// Where queues look at their devices' events (`takeEvents`, a single-consumer queue of the
/// HAL): one serial queue for every watcher, so a watcher replaced while its old timer's
/// handler still runs (a pause and resume by the session) never takes events at the same
/// time as the new one, nor two queues on one device.
enum DeviceWatchQueue {
    static let queue = DispatchQueue(label: "sonora.device-watch")
}
