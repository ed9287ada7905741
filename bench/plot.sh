# plot.sh: sourced by the benchmark scripts that draw with gnuplot.
#
# size_axes prints the gnuplot lines every size sweep shares: log-log
# axes with message sizes on x, plain labels, a grid and the key.
size_axes() {
	cat <<'EOG'
set termoption noenhanced
set logscale xy 2
set xtics ("1 B" 1, "8 B" 8, "64 B" 64, "512 B" 512, "4 KiB" 4096, "32 KiB" 32768, "256 KiB" 262144, "2 MiB" 2097152)
set format y "%.3g"
set key top left
set grid
set xlabel "message size"
EOG
}
