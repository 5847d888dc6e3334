import SonoraCore
import Testing

@Suite("MessageQueue")
struct MessageQueueTests {
    struct Command: Equatable, BitwiseCopyable {
        var parameter: UInt32
        var value: Float
        var frameOffset: Int32
    }

    @Test func firstInFirstOutUntilFull() throws {
        let queue = try MessageQueue<Command>(capacity: 3)
        #expect(queue.capacity == 4)
        #expect(queue.pop() == nil)
        for index in 0..<4 {
            #expect(queue.push(Command(parameter: UInt32(index), value: Float(index) / 2, frameOffset: Int32(index))))
        }
        #expect(!queue.push(Command(parameter: 99, value: 0, frameOffset: 0)))
        #expect(queue.approximateCount == 4)
        for index in 0..<4 {
            #expect(queue.pop() == Command(parameter: UInt32(index), value: Float(index) / 2, frameOffset: Int32(index)))
        }
        #expect(queue.pop() == nil)
        // Wrap many times.
        for index in 0..<1000 {
            #expect(queue.push(Command(parameter: UInt32(index), value: 0, frameOffset: 0)))
            #expect(queue.pop()?.parameter == UInt32(index))
        }
    }

    @Test func badCapacityIsAnError() {
        #expect(throws: AudioError.self) { try MessageQueue<Int>(capacity: 0) }
        #expect(throws: AudioError.self) { try MessageQueue<Int>(capacity: (1 << 24) + 1) }
    }
}
