"""A run on several devices or as one process of a job, and the job around it.

- `topology.py`: where a run trains (backend, devices, processes), from flags or SLURM / Open MPI;
- `processes.py`: what the CLI's device and job flags mean (the topology, each process's own data
  files, `--processes N` checked and started);
- `launch.py`: N local processes of one job; `job.py`: a run as one process of a job;
- `distribute.py`: Keras' engines set up for the topology; `faults.py`: one failing process ends them all.
"""
