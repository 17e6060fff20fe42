#include "rootfs/recipe/image_batteries.h"

namespace sandbox::rootfs {

const std::vector<ImageBattery>& DefaultImageBatteries() {
  static const std::vector<ImageBattery> batteries = {
      // pip and venv for a session's own installs (into /tmp/.local).
      {"pip", "pip", "python3-pip"},
      {"venv", "venv", "python3-venv"},
      // Arrays, tables and numerics. h5py and xarray read HDF5 and netCDF-like data; numba
      // brings LLVM 19 and its tools (240 MiB of the image).
      {"numpy", "numpy", "python3-numpy"},
      {"pandas", "pandas", "python3-pandas"},
      {"scipy", "scipy", "python3-scipy"},
      {"xarray", "xarray", "python3-xarray"},
      {"h5py", "h5py", "python3-h5py"},
      {"numba", "numba", "python3-numba"},
      {"joblib", "joblib", "python3-joblib"},
      // Statistics, machine learning, symbolic maths, graphs, text. nltk comes without its
      // corpora (nltk.download needs the network a sandbox does not have).
      {"scikit-learn", "sklearn", "python3-sklearn"},
      {"statsmodels", "statsmodels", "python3-statsmodels"},
      {"sympy", "sympy", "python3-sympy"},
      {"networkx", "networkx", "python3-networkx"},
      {"nltk (no corpora)", "nltk", "python3-nltk"},
      // Plots and images. plotly writes HTML (no kaleido in Debian, so no static export).
      // Debian's one OpenCV has every backend: python3-opencv brings 800 MiB (VTK, Qt, GDAL,
      // FFmpeg, ROCm), 44% of the image; for a smaller one, drop it here.
      {"matplotlib", "matplotlib", "python3-matplotlib"},
      {"seaborn", "seaborn", "python3-seaborn"},
      {"plotly", "plotly", "python3-plotly"},
      {"pillow", "PIL", "python3-pil"},
      {"imageio", "imageio", "python3-imageio"},
      {"scikit-image", "skimage", "python3-skimage"},
      {"opencv (cv2)", "cv2", "python3-opencv"},
      {"soundfile", "soundfile", "python3-soundfile"},
      // Office documents and reports, in and out.
      {"openpyxl", "openpyxl", "python3-openpyxl"},
      {"xlsxwriter", "xlsxwriter", "python3-xlsxwriter"},
      {"xlrd", "xlrd", "python3-xlrd"},
      {"python-docx", "docx", "python3-docx"},
      {"reportlab", "reportlab", "python3-reportlab"},
      {"pypdf", "pypdf", "python3-pypdf"},
      {"tabulate", "tabulate", "python3-tabulate"},
      {"jinja2", "jinja2", "python3-jinja2"},
      // HTML, XML, JSON and HTTP client APIs (a session has no network; they parse saved pages
      // and uploaded files, and code written for them imports).
      {"beautifulsoup4", "bs4", "python3-bs4"},
      {"lxml", "lxml", "python3-lxml"},
      {"requests", "requests", "python3-requests"},
      {"urllib3", "urllib3", "python3-urllib3"},
      {"aiohttp", "aiohttp", "python3-aiohttp"},
      {"tornado", "tornado", "python3-tornado"},
      {"orjson", "orjson", "python3-orjson"},
      {"pytz", "pytz", "python3-tz"},
      // Tools: an interactive shell and the test runner models write tests for.
      {"ipython", "IPython", "python3-ipython"},
      {"pytest", "pytest", "python3-pytest"},
  };
  return batteries;
}

std::string DefaultImageBatteryNames() {
  std::string names;
  for (const auto& battery : DefaultImageBatteries()) {
    if (battery.module == "pip" || battery.module == "venv") continue;  // tools, not libraries
    if (!names.empty()) names += ", ";
    names += battery.name;
  }
  return names;
}

}  // namespace sandbox::rootfs
