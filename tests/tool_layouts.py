"""Small exports of every tool the readers know, written in each tool's documented layout (column and file names
as the tools write them), for the tests of recognition, wrong-tool refusals and ``read_export``.

>>> sorted(WRITERS)
['cellprofiler', 'halo', 'inform', 'mcmicro', 'qupath', 'steinbock']
"""

from __future__ import annotations

import gzip
from pathlib import Path

HALO_HEAD = ["Image Location", "Analysis Region", "Algorithm Name", "Object Id", "XMin", "XMax", "YMin", "YMax",
             "DAPI Positive Classification", "DAPI Positive Nucleus Classification", "DAPI Nucleus Intensity",
             "CD8 (Opal 570) Positive Classification", "CD8 (Opal 570) Cytoplasm Intensity",
             "CD8 (Opal 570) Cell Intensity", "Cell Area (µm²)", "Nucleus Area (µm²)", "Nucleus Perimeter (µm)",
             "Nucleus Roundness"]
HALO_ROWS = [
    ["C:\\slides\\tumour 1.qptiff", "Layer 1", "HighPlex FL v4.1.3", "0", "100", "112", "40", "51", "1", "1", "12.5",
     "0", "0.25", "0.5", "85.25", "30.5", "20.25", "0.81"],
    ["C:\\slides\\tumour 1.qptiff", "Layer 1", "HighPlex FL v4.1.3", "1", "130", "141", "60", "73", "1", "0", "8.75",
     "1", "3.5", "2.25", "95.5", "28", "19.5", "0.77"],
    ["C:\\slides\\tumour 2.qptiff", "Layer 1", "HighPlex FL v4.1.3", "0", "10", "21", "12", "20", "0", "0", "NaN",
     "0", "0.125", "0.375", "70", "25.75", "18", "0.9"],
]

INFORM_HEAD = ["Path", "Sample Name", "Tissue Category", "Phenotype", "Cell ID", "Total Cells",
               "Cell Density (per megapixel)", "Cell X Position", "Cell Y Position", "Process Region ID",
               "Nucleus Area (pixels)", "Nucleus Compactness", "Nucleus Major Axis",
               "Nucleus DAPI Mean (Normalized Counts, Total Weighting)",
               "Nucleus DAPI Std Dev (Normalized Counts, Total Weighting)", "Entire Cell Area (pixels)",
               "Entire Cell CD8 (Opal 570) Mean (Normalized Counts, Total Weighting)",
               "Entire Cell CD8 (Opal 570) Total (Normalized Counts, Total Weighting)", "Lab ID", "Slide ID",
               "TMA Sector", "TMA Row", "TMA Column", "TMA Field", "Confidence", "Annotation ID"]
INFORM_ROWS = [
    ["C:\\inform\\field1", "Core[1,5,6,1]_[21302,15107].im3", "tumor", "CD8", "1", "#N/A", "#N/A", "510", "398", "ROI1",
     "120", "0.61", "14.25", "3.5", "0.75", "300", "0.75", "225.5", "#N/A", "S1", "1", "5", "6", "1", "95.00%", "#N/A"],
    ["C:\\inform\\field1", "Core[1,5,6,1]_[21302,15107].im3", "stroma", "other", "2", "#N/A", "#N/A", "520", "408",
     "ROI1", "110", "0.58", "12.5", "#N/A", "0.5", "280", "0.01", "2.8", "#N/A", "S1", "1", "5", "6", "1", "0.01 %",
     "#N/A"],
    ["C:\\inform\\field2", "Core[1,5,7,1]_[21800,15107].im3", "tumor", "CD8", "1", "#N/A", "#N/A", "12", "7.5", "ROI1",
     "100", "0.66", "11.0", "4.25", "0.25", "250", "1.5", "375", "#N/A", "S1", "1", "5", "7", "1", "87.5%", "#N/A"],
]

CELLPROFILER_CELLS = ("ImageNumber,ObjectNumber,Metadata_Well,AreaShape_Area,AreaShape_Perimeter,AreaShape_FormFactor,"
                      "AreaShape_Orientation,Location_Center_X,Location_Center_Y,Intensity_MeanIntensity_DNA,"
                      "Intensity_IntegratedIntensity_DNA,Intensity_MedianIntensity_CD3,Neighbors_NumberOfNeighbors_"
                      "Adjacent,Neighbors_PercentTouching_Adjacent\n"
                      "1,1,A01,40,24.5,0.84,12.5,10.5,3,0.5,20,0.125,1,25.5\n"
                      "1,2,A01,52,27.25,0.88,-45,14,6,0.25,13,0.375,1,30\n"
                      "2,1,A02,60,29,0.9,80.25,3,4,nan,,0.75,0,0\n")
CELLPROFILER_IMAGE = ("ImageNumber,FileName_DNA,PathName_DNA,FileName_CD3,Count_Cells,Metadata_Well\n"
                      "1,A01_s1.tiff,/data,A01_s1_cd3.tiff,2,A01\n2,A02_s1.tiff,/data,A02_s1_cd3.tiff,1,A02\n")
CELLPROFILER_RELATIONSHIPS = (
    "Module,Module Number,Relationship,First Object Name,First Image Number,First Object Number,"
    "Second Object Name,Second Image Number,Second Object Number\n"
    "MeasureObjectNeighbors,7,Neighbors,Cells,1,1,Cells,1,2\n"
    "MeasureObjectNeighbors,7,Neighbors,Cells,1,2,Cells,1,1\n"
    "RelateObjects,8,Parent,Nuclei,1,1,Cells,1,1\n")


def tsv(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join("\t".join(r) for r in [head, *rows]) + "\n"


def write_halo(folder: Path) -> Path:
    """A HALO object data table of two images: comma-separated, UTF-8 with a byte order mark, CRLF line ends."""
    path = folder / "Total_Object_Results.csv"
    text = "\r\n".join(",".join(f'"{v}"' if "," in v else v for v in r) for r in [HALO_HEAD, *HALO_ROWS]) + "\r\n"
    path.write_bytes(text.encode("utf-8-sig"))
    return path


def write_inform(folder: Path) -> Path:
    """An inForm merged cell_seg_data.txt of two fields: tab-separated, #N/A, percentages as text."""
    path = folder / "Merge_cell_seg_data.txt"
    path.write_text(tsv(INFORM_HEAD, INFORM_ROWS), encoding="utf-8")
    return path


def write_cellprofiler(folder: Path) -> Path:
    """An ExportToSpreadsheet folder: MyExpt_Cells.csv, MyExpt_Image.csv, MyExpt_Object_relationships.csv."""
    out = folder / "cp_output"
    out.mkdir()
    (out / "MyExpt_Cells.csv").write_text(CELLPROFILER_CELLS)
    (out / "MyExpt_Image.csv").write_text(CELLPROFILER_IMAGE)
    (out / "MyExpt_Object_relationships.csv").write_text(CELLPROFILER_RELATIONSHIPS)
    return out


def write_qupath(folder: Path) -> Path:
    path = folder / "measurements.tsv"
    path.write_text(tsv(["Image", "Object ID", "Object type", "Classification", "Centroid X µm", "Centroid Y µm",
                         "Centroid X px", "Centroid Y px", "Cell: Area µm^2", "Nucleus: CD3: Mean"],
                        [["a.tif", "c1", "Cell", "CD3+", "10", "5", "20", "10", "80.5", "450.25"],
                         ["a.tif", "c2", "Cell", "Tumor", "14", "6", "28", "12", "90", "8.5"]]), encoding="utf-8")
    return path


def write_mcmicro(folder: Path) -> Path:
    """An mcquant table stored gzip-compressed, as cycif pipelines keep them."""
    path = folder / "exemplar-001--unmicst_cell.csv.gz"
    path.write_bytes(gzip.compress(b"CellID,DNA_1,CD3,X_centroid,Y_centroid,Area\n1,12873.4,310.5,12.5,3.0,150\n"
                                   b"2,10241.7,5210.75,40.0,8.75,240\n"))
    return path


def write_steinbock(folder: Path) -> Path:
    root = folder / "steinbock"
    for part in ("intensities", "regionprops", "neighbors"):
        (root / part).mkdir(parents=True)
    (root / "panel.csv").write_text("channel,name,keep\nIr191,DNA1,1\nYb176,CD3,1\n")
    (root / "images.csv").write_text("image,width_px,height_px,acquisition_width_um,acquisition_height_um\n"
                                     "P1_001.tiff,100,80,100,80\n")
    (root / "intensities/P1_001.csv").write_text("Object,DNA1,CD3\n1,5.0,0.5\n2,4.0,3.5\n")
    (root / "regionprops/P1_001.csv").write_text("Object,area,centroid-0,centroid-1\n1,12,10.0,4.0\n2,20,12.0,7.0\n")
    (root / "neighbors/P1_001.csv").write_text("Object,Neighbor,Distance\n1,2,3.6\n2,1,3.6\n")
    return root


WRITERS = {"halo": write_halo, "inform": write_inform, "cellprofiler": write_cellprofiler, "qupath": write_qupath,
           "mcmicro": write_mcmicro, "steinbock": write_steinbock}
# What each tool's export needs besides its path to be read.
OPTIONS = {"halo": {"pixel_size": 0.5}, "inform": {"pixel_size": 0.5}, "cellprofiler": {"pixel_size": 0.5},
           "qupath": {}, "mcmicro": {"pixel_size": 0.65}, "steinbock": {}}
TOOL_NAMES = {"halo": "HALO", "inform": "inForm", "cellprofiler": "CellProfiler", "qupath": "QuPath",
              "mcmicro": "MCMICRO", "steinbock": "steinbock"}
