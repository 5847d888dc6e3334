import SonoraCore

/// A unit at the head of a live graph that runs an audio device's I/O thread: the
/// RemoteIO unit and the voice-processing I/O unit. `AudioGraph.start()/stop()` drive
/// whichever heads the graph through this.
public protocol DeviceDrivingUnit: AnyObject {
    func start(driving graph: AudioGraph?) throws(AudioError)
    func stop()
}
