"""The examples each ``qdqc`` command's help ends with (every one runs as written)."""

EXAMPLES = {
    "ops": "qdqc ops\n  qdqc ops --json",
    "emit": "qdqc emit FakeQuantWithMinMaxArgs --attr min=-1 --attr max=1 --shape '?x8'\n"
            "  qdqc emit QuantizeAndDequantizeV4 --attr range_given=true --attr axis=1 --shape '4x?x3' --dtype f64",
    "compile": "qdqc compile FakeQuantWithMinMaxVars --attr num_bits=4 --shape '?' --target cpu -o fq.vmfb",
    "run": "qdqc run FakeQuantWithMinMaxArgs --attr num_bits=4 --input x.npy -o y.npy\n"
           "  qdqc run FakeQuantWithMinMaxVars --input x.npy --input -1 --input 1.5 --target vmvx\n"
           "  qdqc run FakeQuantWithMinMaxVars --input x.npy --input min.npy --input max.npy",
    "validate": "qdqc validate\n  qdqc validate --targets all\n  qdqc validate --targets cpu,vmvx,vulkan --ops FakeQuantWithMinMaxArgs "
                "--report r.json --junit r.xml --markdown r.md\n  qdqc validate --shard 1/4\n"
                "  qdqc validate --semantics tf-cpu,tf-xla --ops FakeQuantWithMinMaxVars\n"
                "  qdqc validate --targets all --cluster local:2\n  qdqc validate --targets all --cluster tcp://head:8786",
    "diverge": "qdqc diverge --ops FakeQuantWithMinMaxArgs,FakeQuantWithMinMaxVars\n"
               "  qdqc diverge --dtypes f32 --markdown diverge.md --json diverge.json --junit diverge.xml\n"
               "  qdqc diverge --exported ort-cpu --size 20000",
    "cache": "qdqc cache info\n  qdqc cache clear",
    "targets": "qdqc targets\n  qdqc targets --json",
    "bench": "qdqc bench --sizes 16,20,24 --json bench.json --plot bench.png",
    "build": "qdqc build --config examples/qat_bundle.toml --out dist/\n"
             "  qdqc build --config examples/qat_bundle.toml --out dist/ --cluster tcp://head:8786",
    "worker": "qdqc worker tcp://head:8786\n  qdqc worker tcp://head:8786 --targets cpu,vulkan --name lab-gpu-1\n"
              "  qdqc worker tcp://head:8786 --print-command",
}
