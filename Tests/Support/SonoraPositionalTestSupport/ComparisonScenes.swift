/// Scenes whose source states, offsets and processed counts both engines must report alike
/// (OpenAL 1.1 fixes them; no level is read). Steps are deliberately not multiples of the
/// buffers, so a position off by one frame shows.
public enum ComparisonScenes {
    static let frequency = 48_000

    /// Play a 5000-frame buffer through to its end, pause and resume, stop, rewind, replay.
    public static var playPauseStopRewind: PositionalScene {
        var scene = PositionalScene(buffers: [.noise(frames: 5_000)], sourceCount: 1)
        scene.step(700, .buffer(source: 0, buffer: 0), .position(source: 0, [0, 0, -1]))
        scene.step(1_000, .play([0]))
        scene.step(1_000)
        scene.step(500, .pause([0]))
        scene.step(1_000, .play([0]))
        scene.step(1_500)
        scene.step(1_000)          // runs off the end: stopped
        scene.step(300, .rewind([0]))
        scene.step(1_200, .play([0]))
        scene.step(400, .stop([0]))
        scene.step(400, .play([0]))
        scene.step(400, .sampleOffset(source: 0, 3_000))
        scene.step(2_000)
        return scene
    }

    /// A looping source: the offset wraps; stop ends it; a pitch of 1.5 and 0.75 moves it
    /// 1.5 and 0.75 frames per frame.
    public static var loopingAndPitch: PositionalScene {
        var scene = PositionalScene(buffers: [.noise(frames: 3_000)], sourceCount: 3)
        scene.step(10, .buffer(source: 0, buffer: 0), .looping(source: 0, true),
                   .buffer(source: 1, buffer: 0), .looping(source: 1, true), .pitch(source: 1, 1.5),
                   .buffer(source: 2, buffer: 0), .pitch(source: 2, 0.75))
        scene.step(1_000, .play([0, 1, 2]))
        for _ in 0..<6 { scene.step(1_100) }
        scene.step(900, .looping(source: 0, false))
        scene.step(2_000)
        scene.step(1_700)
        return scene
    }

    /// Streaming: four 1000-frame buffers queued, processed ones unqueued and queued again
    /// while playing, then the queue runs dry (stopped, all processed) and is refilled.
    public static var queuedStreaming: PositionalScene {
        var scene = PositionalScene(buffers: (0..<6).map { .noise(frames: 1_000, seed: UInt32($0 + 1)) }, sourceCount: 1)
        scene.step(100, .queue(source: 0, buffers: [0, 1, 2, 3]))
        scene.step(512, .play([0]))
        scene.step(512)
        scene.step(1_100)
        scene.step(512, .unqueue(source: 0, count: 2), .queue(source: 0, buffers: [4, 5]))
        scene.step(1_500)
        scene.step(512, .unqueue(source: 0, count: 1))
        scene.step(4_000)           // runs dry: stopped
        scene.step(256, .unqueue(source: 0, count: 3))
        scene.step(700, .queue(source: 0, buffers: [0]), .play([0]))
        scene.step(500)
        return scene
    }

    /// Two sources played, paused and stopped as a group (atomically, at the same frame).
    public static var groups: PositionalScene {
        var scene = PositionalScene(buffers: [.noise(frames: 2_400), .noise(frames: 4_000, seed: 7)], sourceCount: 2)
        scene.step(64, .buffer(source: 0, buffer: 0), .buffer(source: 1, buffer: 1))
        scene.step(1_000, .play([0, 1]))
        scene.step(333, .pause([0, 1]))
        scene.step(1_000, .play([1]))
        scene.step(1_000, .play([0]))
        scene.step(1_000, .stop([0, 1]))
        scene.step(1_000, .rewind([0, 1]))
        return scene
    }

    public static let all: [(name: String, scene: PositionalScene)] = [
        ("play, pause, stop, rewind, offset", playPauseStopRewind), ("looping and pitch", loopingAndPitch),
        ("queued streaming", queuedStreaming), ("groups", groups),
    ]
}
