cd /work/main
for round in 1 2 3; do
  for v in base new; do
    if [ $v = base ]; then dir=/tmp/w/base; else dir=/work/main; fi
    (cd $dir && PYTHONPATH=$dir /work/main/.venv/bin/python -m cuzk_plugin.backends.opencl.bench --msm-g1 19 --msm-g2 17 --repeat 3 2>&1 | grep '"op"' | sed "s/^/$v r$round /")
  done
done
