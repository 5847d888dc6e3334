import CLilv
import Foundation
import SonoraTestSupport
import Synchronization
import Testing
@testable import SonoraLV2

@Suite struct URIDMapTests {
    @Test func mapsOnceAndUnmapsBack() {
        let map = URIDMap(capacity: 64)
        let a = map.map("http://example.org/a")
        let b = map.map("http://example.org/b")
        #expect(a != 0 && b != 0 && a != b)
        #expect(map.map("http://example.org/a") == a)
        #expect(map.uri(of: b) == "http://example.org/b")
        #expect(map.uri(of: 999) == nil)
    }

    @Test func fullTableReturnsZero() {
        let map = URIDMap(capacity: 4)
        for index in 0..<4 { #expect(map.map("urn:x:\(index)") != 0) }
        #expect(map.map("urn:x:overflow") == 0)
        #expect(map.map("urn:x:2") != 0)  // lookups still work
    }

    @Test func concurrentMappingAgrees() async {
        let map = URIDMap(capacity: 4096)
        let results = await withTaskGroup(of: [UInt32].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<500).map { map.map("urn:concurrent:\($0)") } }
            }
            var all: [[UInt32]] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(Set(results.map { $0 }).count == 1, "threads got different URIDs for the same URIs")
        #expect(map.mappedCount == 500)
    }

    @Test(.enabled(if: AllocationCounter.isAvailable))
    func alreadyMappedLookupsMakeNoHeapCalls() throws {
        let map = URIDMap()
        let uri = "http://lv2plug.in/ns/ext/atom#Sequence"
        let urid = map.map(uri)
        try uri.withCString { text in
            AllocationCounter.begin()
            var same = true
            for _ in 0..<1000 { same = same && map.map(text) == urid && map.unmap(urid) != nil }
            let calls = AllocationCounter.end()
            #expect(same)
            #expect(calls == 0)
        }
    }
}
