import stage_decode
import stage_encode
from engine import GraphEngine

if __name__ == "__main__":
    engine = GraphEngine()
    stage_encode.prepare(engine)
    stage_decode.prepare(engine)
    for g in engine.graphs.values():
        g.replay()
