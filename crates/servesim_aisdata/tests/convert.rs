//! The converter on a small package of its own making: parquet tables in AIConfigurator's
//! layout, converted, read back by the engine's reader, value for value.

use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use servesim_aisdata::{LaneOrders, convert, sources};
use servesim_engine::perf::ais::data::{AttnKey, KernelData};
use std::path::{Path, PathBuf};
use std::sync::Arc;

enum Col {
    Str(Vec<&'static str>),
    Int(Vec<i64>),
    F64(Vec<f64>),
}

/// Writes a parquet file of required columns.
fn write(path: &Path, cols: &[(&str, Col)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let fields: Vec<String> = cols
        .iter()
        .map(|(n, c)| match c {
            Col::Str(_) => format!("REQUIRED BYTE_ARRAY {n} (UTF8);"),
            Col::Int(_) => format!("REQUIRED INT64 {n};"),
            Col::F64(_) => format!("REQUIRED DOUBLE {n};"),
        })
        .collect();
    let schema = Arc::new(parse_message_type(&format!("message t {{ {} }}", fields.join(" "))).unwrap());
    let file = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(file, schema, Default::default()).unwrap();
    let mut rg = w.next_row_group().unwrap();
    for (_, c) in cols {
        let mut cw = rg.next_column().unwrap().unwrap();
        match c {
            Col::Str(v) => {
                let v: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(*s)).collect();
                cw.typed::<ByteArrayType>().write_batch(&v, None, None).unwrap();
            }
            Col::Int(v) => {
                cw.typed::<Int64Type>().write_batch(v, None, None).unwrap();
            }
            Col::F64(v) => {
                cw.typed::<DoubleType>().write_batch(v, None, None).unwrap();
            }
        }
        cw.close().unwrap();
    }
    rg.close().unwrap();
    w.close().unwrap();
}

fn package() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("servesim-aisdata-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let sys = dir.join("systems");
    std::fs::create_dir_all(&sys).unwrap();
    std::fs::write(
        sys.join("toy.yaml"),
        "data_dir: data/toy\ngpu:\n  mem_bw: 1000000000000\n  mem_bw_empirical_scaling_factor: 0.8\n  mem_empirical_constant_latency: 0.000003\n  mem_capacity: 85899345920\n  bfloat16_tc_flops: 1000000000000000\n  fp8_tc_flops: 2000000000000000\n  power: 700\n  sm_version: 90\nnode:\n  num_gpus_per_node: 8\n  inter_node_bw: 50000000000\n  intra_node_bw: 450000000000\n  p2p_latency: 0.00001\nmisc:\n  nccl_mem:\n    1: 0\n    2: 100\n  other_mem: 3758096384\n",
    )
    .unwrap();
    let data = sys.join("data/toy");
    let s = |v: &[&'static str]| Col::Str(v.to_vec());
    // GEMM: the current version has m = 1, 16 at (n, k) = (64, 64); an earlier one adds m = 256
    // and repeats m = 1 with another value (the current one's stays).
    let gemm = |dir: &str, ms: Vec<i64>, lat: Vec<f64>| {
        let n = ms.len();
        write(
            &data.join(format!("gemm/vllm/{dir}/gemm_perf.parquet")),
            &[
                ("gemm_dtype", Col::Str(vec!["bfloat16"; n])),
                ("m", Col::Int(ms)),
                ("n", Col::Int(vec![64; n])),
                ("k", Col::Int(vec![64; n])),
                ("latency", Col::F64(lat)),
            ],
        )
    };
    gemm("1.0", vec![1, 16], vec![0.011, 0.02]);
    gemm("0.9", vec![1, 256], vec![9.0, 0.5]);
    // Context attention: two lanes carry the same key; the lane order picks `b`. A windowed
    // row is dropped.
    write(
        &data.join("attention/vllm/1.0/context_attention_perf.parquet"),
        &[
            ("kernel_source", s(&["a", "b", "b", "b"])),
            ("batch_size", Col::Int(vec![1, 1, 2, 1])),
            ("isl", Col::Int(vec![128, 128, 128, 128])),
            ("num_heads", Col::Int(vec![8, 8, 8, 8])),
            ("num_key_value_heads", Col::Int(vec![2, 2, 2, 2])),
            ("head_dim", Col::Int(vec![128, 128, 128, 128])),
            ("attn_dtype", s(&["bfloat16"; 4])),
            ("kv_cache_dtype", s(&["bfloat16"; 4])),
            ("window_size", Col::Int(vec![0, 0, 0, 4096])),
            ("latency", Col::F64(vec![1.0, 2.0, 3.0, 4.0])),
        ],
    );
    write(
        &data.join("attention/vllm/1.0/generation_attention_perf.parquet"),
        &[
            ("batch_size", Col::Int(vec![1, 1])),
            ("isl", Col::Int(vec![100, 100])),
            ("step", Col::Int(vec![0, 28])),
            ("num_heads", Col::Int(vec![8, 8])),
            ("num_key_value_heads", Col::Int(vec![8, 8])),
            ("head_dim", Col::Int(vec![64, 64])),
            ("kv_cache_dtype", s(&["fp8"; 2])),
            ("latency", Col::F64(vec![0.5, 43.273640950520836])),
        ],
    );
    // All-reduce: the eager kernel's row is left out.
    write(
        &data.join("comm/vllm/1.0/custom_allreduce_perf.parquet"),
        &[
            ("kernel_source", s(&["graph", "graph_eager"])),
            ("num_gpus", Col::Int(vec![2, 2])),
            ("message_size", Col::Int(vec![1024, 2048])),
            ("latency", Col::F64(vec![0.007, 0.5])),
        ],
    );
    dir
}

#[test]
fn converts_a_small_package_exactly() {
    let pkg = package();
    let data = pkg.join("systems/data/toy");
    // Sources: the slot's own table, then earlier versions of the same framework.
    let src = sources(&data, "gemm", "vllm", "1.0", "gemm_perf.parquet").unwrap();
    assert_eq!(src, vec![data.join("gemm/vllm/1.0/gemm_perf.parquet"), data.join("gemm/vllm/0.9/gemm_perf.parquet")]);
    assert!(sources(&data, "gemm", "vllm", "0.9", "gemm_perf.parquet").unwrap().len() == 1, "never a later version");

    let lanes: LaneOrders = serde_json::from_str(r#"{"toy/vllm/1.0": {"ctx": ["b", "default"], "gen": ["default"]}}"#).unwrap();
    let c = convert(&pkg, "toy", "vllm", "1.0", &lanes).unwrap();
    let d = KernelData::from_bytes(&c.bytes).unwrap();
    assert_eq!(d.meta.system.name, "toy");
    assert_eq!(d.meta.system.nccl_mem.get(&2), Some(&100));
    assert_eq!(d.meta.provenance["package"], "aiconfigurator-core");
    assert_eq!(d.meta.provenance["tables"][0]["sources"][1], "systems/data/toy/gemm/vllm/0.9/gemm_perf.parquet");

    let sol = |_: f64, _: f64, _: f64| 1e-9;
    let g = d.gemm("bfloat16").unwrap().unwrap();
    // First value wins (the current version's m = 1), the earlier version fills m = 256.
    assert_eq!(g.query(1.0, 64, 64, &sol).unwrap().latency, 0.011);
    assert_eq!(g.query(256.0, 64, 64, &sol).unwrap().latency, 0.5);

    let ctx = |lane_key: u32| {
        d.context(&AttnKey { fmha: "bfloat16".into(), kv: "bfloat16".into(), n_kv: 2, head_size: 128, window: lane_key }).unwrap()
    };
    let grid = ctx(0).expect("the window-0 slice");
    let pts: Vec<_> = grid.points().map(|(c, v)| (c.to_vec(), v.latency)).collect();
    assert_eq!(pts, vec![(vec![8, 128, 1], 2.0), (vec![8, 128, 2], 3.0)], "lane b, not a");
    assert!(ctx(4096).is_none(), "windowed slices are not kept");

    let decode = d.generation(&AttnKey { fmha: String::new(), kv: "fp8".into(), n_kv: 0, head_size: 64, window: 0 }).unwrap().unwrap();
    let pts: Vec<_> = decode.points().map(|(c, v)| (c.to_vec(), v.latency.to_bits())).collect();
    // (heads, batch, isl + step); the value keeps its bits through the float32 encoding.
    assert_eq!(pts[1], (vec![8, 1, 128], 43.273640950520836f64.to_bits()));

    assert_eq!(d.allreduce_sizes(), vec![2]);
    assert_eq!(d.allreduce(2).unwrap().unwrap().query(1024.0).unwrap().latency, 0.007);
    // 2048 was the eager kernel's: held from 1024 by the SOL (∝ size) ratio.
    assert_eq!(d.allreduce(2).unwrap().unwrap().query(2048.0).unwrap().latency, 0.014);
    let _ = std::fs::remove_dir_all(&pkg);
}
