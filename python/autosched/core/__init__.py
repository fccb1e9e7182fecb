"""The core objects: tensor expressions (te), ComputeDAG, State, SearchTask, Target and HardwareParams, the
reference evaluator, and the one build path from a state to a Module (build, artifact). Every other layer of
the package stands on this one; it imports none of them."""
