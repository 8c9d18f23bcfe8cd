"""The golden-vector tool: TF 2.21's answers for every raw op, written to qdq_compiler/goldens/.

TensorFlow is a data-generation tool only: the package and its tests never import this or TF. Run it from
the repository root in the TF virtualenv, ``/work/tfvenv/bin/python -m tools.goldens --help`` (cli.py).

    fmt.py                      the file format: hex floats, tensors, case records, files
    child.py                    TF in forked children (some error cases abort the process)
    tf_cpu.py, tf_xla.py,       the reference runners: TF's CPU kernels (eager and graph), its XLA
    tf_half.py                  lowering, and the 16-bit FakeQuant definition run through TF
    registry.py                 op name -> case generator, per set
    gen_*.py, declared.py,      the case generators; the spec vectors and error cases; the hand-written
    edge_data.py                edge and error rows
    caselib.py, model.py        what the generators share; a numpy model of TF's kernels (aiming, --check)
"""
