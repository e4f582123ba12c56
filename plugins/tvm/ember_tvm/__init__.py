"""ember_tvm: the ``tvm`` backend, which compiles ember's graphs with Apache TVM (Relax).

The compiler is :func:`ember_tvm.backend.tvm` (imported lazily by the plugin entry point, so
``import ember_tvm`` never imports TVM). Options (``ember.compile(fn, backend="tvm",
options={...})``), with their defaults:

=====================  =========  ===========================================================
``fallback_on_grad``   True       inputs requiring grad (grad mode on): run eagerly with one
                                  warning; False raises ``GradientsNotSupported``
``tuning``             "default"  "default" (TVM pipeline + ember's CPU parallel/vectorize
                                  schedule), "none" (serial loops), "meta_schedule" (tuning;
                                  also ``mode="max-autotune"``)
``trials``             64         MetaSchedule trial budget (total)
``trials_per_task``    None       MetaSchedule trials per task (None: ``trials``)
``cache``              True       keep built libraries on disk (``EMBER_CACHE_DIR``/tvm)
``cache_dir``          None       overrides ``EMBER_CACHE_DIR`` / ``~/.cache/ember``
``verify``             True       check each compiled piece against eager on first inputs
``partition``          True       allow PyTorch ops between TVM pieces (else whole-graph eager)
``target``             None       explicit TVM target (dict), else the host CPU / the GPU
``max_specializations`` 8         input signatures compiled per piece before staying eager
=====================  =========  ===========================================================
"""
